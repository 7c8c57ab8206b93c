# Shared by the benchmark scripts (sourced, not run): the line that says which machine the figures
# come from, and the unmount of a private root's loopback store.

# bench_machine_line: CPU model, cores, RAM, host kernel, which KVM (hardware, or PVM, where guest
# kernel code is interpreted) and the load average, on one line.
bench_machine_line() {
  local kvm_kind=hardware
  [ -d /sys/module/kvm_pvm ] && kvm_kind="pvm (kvm_pvm module: guest kernel code interpreted)"
  if [ ! -e /dev/kvm ]; then
    kvm_kind="none (/dev/kvm absent)"
    [ -d /sys/module/kvm_pvm ] && kvm_kind="none (/dev/kvm absent: this kernel is itself a PVM guest)"
  fi
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores online," \
    "$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) RAM, kernel $(uname -r), KVM: $kvm_kind," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg)"
}

# bench_unmount_store ROOT WHO: unmounts ROOT/store if it is mounted, retrying for 3 s while the
# last VMMs exit; says so on stderr, as WHO, and returns 1 if it stays mounted.
bench_unmount_store() {
  mountpoint -q "$1/store" 2>/dev/null || return 0
  for _ in 1 2 3 4 5 6 7 8 9 10; do umount "$1/store" 2>/dev/null && return 0; sleep 0.3; done
  echo "$2: could not unmount $1/store: $(umount "$1/store" 2>&1)" >&2
  return 1
}

# bench_private_root WHO TEMPLATE: sets WORK to a new directory (mktemp -d TEMPLATE) and ROOT to
# the caller's root, else $WORK/root, made absolute; refuses the system's own root (as WHO);
# exports SPACE_ROOT and SPACE_RUN_DIR ($WORK/run). Call it in the script's own shell.
bench_private_root() {
  WORK=$(mktemp -d "$2")
  [ -n "${ROOT:-}" ] || ROOT=$WORK/root
  case $ROOT in /*) ;; *) ROOT=$PWD/$ROOT ;; esac
  case $ROOT in /var/lib/space*) echo "$1: refusing to use $ROOT" >&2; rm -rf "$WORK"; exit 1 ;; esac
  mkdir -p "$ROOT"
  ROOT=$(cd "$ROOT" && pwd -P)
  case $ROOT in /var/lib/space*) echo "$1: refusing to use $ROOT" >&2; rm -rf "$WORK"; exit 1 ;; esac
  export SPACE_ROOT=$ROOT SPACE_RUN_DIR=$WORK/run
}

# bench_remove_work WHO: unmounts $ROOT/store and removes $WORK (with a private root inside it);
# returns 1 if the store stays mounted. bench_kept WHO: says what --keep left.
bench_remove_work() {
  local rc=0
  bench_unmount_store "$ROOT" "$1" || rc=1
  rm -rf --one-file-system "$WORK"
  return $rc
}
bench_kept() { echo "$1: kept $WORK and $ROOT (store mounted)" >&2; }

# bench_destroy PREFIX: destroys, forcibly and quietly, every sandbox of $ROOT named PREFIX-*.
bench_destroy() {
  local dir
  for dir in "$ROOT"/store/sandboxes/"$1"-*; do
    [ -e "$dir" ] && "$SPACE_BIN" destroy --force "${dir##*/}" >/dev/null 2>&1
  done
  return 0
}

# bench_stats NAME UNIT FILE: prints "NAME  median X  p90 Y UNIT  (n=K)" of the numbers in FILE,
# one a line (or "no samples").
bench_stats() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys
name, unit, path = sys.argv[1:]
v = sorted(float(x) for x in open(path) if x.strip())
if not v:
    print(f"{name:<52} no samples"); sys.exit()
med = v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
p90 = v[min(len(v) - 1, int(round(0.9 * (len(v) - 1))))]
print(f"{name:<52} median {med:9.2f}  p90 {p90:9.2f} {unit}  (n={len(v)})")
PY
}
# bench_median FILE: the median of the numbers in FILE, one a line.
bench_median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
