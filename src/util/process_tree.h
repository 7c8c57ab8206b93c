// A process's children and its threads, from /proc: what a subreaper (the gvisor monitor) or a
// caller that acts on a whole process tree (the gvisor pool's renice) needs. Read once, racing
// with exits: a child or thread that ends meanwhile is simply missing.
#pragma once
#include <sys/types.h>

#include <vector>

namespace space::proc {

// The children of every thread of `pid` (/proc/PID/task/*/children), in no particular order.
std::vector<pid_t> children_of(pid_t pid);
// The thread ids of `pid` (/proc/PID/task); empty if it has gone.
std::vector<pid_t> threads_of(pid_t pid);

}  // namespace space::proc
