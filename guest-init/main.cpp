// Placeholder: guest-init lands here.
int main() { return 1; }
