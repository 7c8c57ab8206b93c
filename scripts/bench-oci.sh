#!/usr/bin/env bash
# Benchmarks of space as an OCI runtime. (1) `podman run --rm IMAGE true` with --runtime
# space-oci and with runc, interleaved in the same run (median, p90, and the ratio), and where a
# space run's time goes (each runtime call's wall time, from a wrapper that logs them: create,
# start, the process, delete). (2) Turning a bundle's root into a disk: a 100 MiB root
# ($BENCH_ROOT_MIB) through `space-oci --debug create` twice: the first reads and imports the
# tree (mkfs.ext4 -d), the second finds the image by its digest and only reads the tree.
# Uses the integration tests' set-up (a private root under /tmp, the cached kernel and rootfs,
# one shared template, cleanup on exit). Both runtimes get `--ulimit nofile=1024:1024 --ulimit
# nproc=1024:1024`: podman's default rlimits exceed this host's hard limits, which runc refuses.
# Environment: SPACE_BIN (default build/space), BENCH_RUNS (default 20), BENCH_ROOT_MIB (100).
source "$(dirname "$0")/../tests/integration/lib.sh"
source "$SRC/scripts/bench-lib.sh"
RUNS=${BENCH_RUNS:-20}
ROOT_MIB=${BENCH_ROOT_MIB:-100}
command -v podman >/dev/null || fail "podman is not installed: apt-get install podman"
RUNC=$(command -v runc || true)
[ -n "$RUNC" ] || fail "runc (the peer) is not installed: apt-get install runc"
shared_template default

work=$TEST_ROOT/bench-oci
STATE=$TEST_ROOT/oci-state
mkdir -p "$work/img/bin"
cp "$(command -v busybox)" "$work/img/bin/busybox"
for a in sh true; do ln -s busybox "$work/img/bin/$a"; done
tar -C "$work/img" -cf "$work/rootfs.tar" .
calls=$work/calls.log
runtime=$work/space-oci-bench
cat >"$runtime" <<SH
#!/bin/bash
# Logs each call's command and wall time (ms) to $calls.
export SPACE_ROOT=$SPACE_ROOT SPACE_RUN_DIR=$SPACE_RUN_DIR
t0=\${EPOCHREALTIME/./}
exec -a space-oci "$SPACE_BIN" --root "$STATE" "\$@" &
pid=\$!
wait \$pid
rc=\$?
t1=\${EPOCHREALTIME/./}
echo "\$1 \$(( (t1 - t0) / 1000 ))" >>"$calls"
exit \$rc
SH
chmod +x "$runtime"
tag=localhost/space-bench-oci-$$
pod() { podman --storage-driver vfs --root "$work/store" --runroot "$work/run" "$@"; }
cleanup_bench() {
  pod rm -af -t 0 >/dev/null 2>&1
  pod rmi -f "$tag" >/dev/null 2>&1
  rm -rf "$work/store" "$work/run"
  local c
  for c in $("$SPACE_BIN" --oci --root "$STATE" list -q 2>/dev/null); do
    "$SPACE_BIN" --oci --root "$STATE" delete --force "$c" >/dev/null 2>&1
  done
}
at_exit cleanup_bench
pod import -q "$work/rootfs.tar" "$tag" >/dev/null || fail "podman import"
limits=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)

ms() {  # ms FILE CMD...: runs CMD, appends its wall time in ms to FILE
  local file=$1 t0 t1
  shift
  t0=${EPOCHREALTIME/./}
  "$@" >/dev/null 2>"$work/err" || fail "'$*' failed: $(cat "$work/err")"
  t1=${EPOCHREALTIME/./}
  echo "scale=3; ($t1 - $t0) / 1000" | bc >>"$file"
}
stats() { bench_stats "$1" ms "$2"; }  # stats NAME FILE
median() { bench_median "$1"; }

echo "== podman run --rm IMAGE true, $RUNS runs each, interleaved"
pod --runtime "$runtime" run --rm "${limits[@]}" "$tag" true >/dev/null || fail "a first run with space-oci"
pod --runtime "$RUNC" run --rm "${limits[@]}" "$tag" true >/dev/null || fail "a first run with runc"
: >"$calls"
for _ in $(seq "$RUNS"); do
  ms "$work/space.ms" pod --runtime "$runtime" run --rm "${limits[@]}" "$tag" true
  ms "$work/runc.ms" pod --runtime "$RUNC" run --rm "${limits[@]}" "$tag" true
done
stats "podman run --rm true, --runtime space-oci" "$work/space.ms"
stats "podman run --rm true, --runtime runc" "$work/runc.ms"
echo "ratio of medians (space-oci / runc): $(echo "scale=1; $(median "$work/space.ms") / $(median "$work/runc.ms")" | bc)x"
echo "-- where a space-oci run goes: each runtime call podman made"
for c in create start state kill delete; do
  { grep "^$c " "$calls" || true; } | awk '{ print $2 }' >"$work/call-$c.ms"
  [ -s "$work/call-$c.ms" ] && stats "  space-oci $c" "$work/call-$c.ms"
done
echo "   (create includes restoring the VM and copying the bind-mounted files in, which is the guest's"
echo "    first handshake after the restore; the process itself runs between start and delete)"

echo "== a ${ROOT_MIB} MiB bundle root to a disk"
bundle=$work/bundle
mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs/data"
cp "$(command -v busybox)" "$bundle/rootfs/bin/busybox"
ln -s busybox "$bundle/rootfs/bin/true"
for i in $(seq "$ROOT_MIB"); do head -c 1048576 /dev/urandom >"$bundle/rootfs/data/f$i"; done
cat >"$bundle/config.json" <<JSON
{"ociVersion": "1.0.2", "root": {"path": "rootfs"}, "process": {"args": ["true"], "env": ["PATH=/bin"]}}
JSON
for n in 1 2; do
  "$SPACE_BIN" --oci --root "$STATE" --debug create --bundle "$bundle" "big$n" 2>"$work/big$n.err" ||
    fail "create big$n: $(cat "$work/big$n.err")"
  line=$(grep "rootfs .*: image" "$work/big$n.err") || fail "no rootfs line in: $(cat "$work/big$n.err")"
  echo "  create $n: ${line#*: image }"
  "$SPACE_BIN" --oci --root "$STATE" delete --force "big$n" >/dev/null
done
echo "  (import: a miss, the first container of this content; a hit costs only the digest)"
