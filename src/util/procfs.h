// What /proc says of a process, read at the moment of the call and racing with its exit (a
// process or thread that ends meanwhile is simply gone): its start time (field 22 of
// /proc/PID/stat, clock ticks since boot, which with the pid names a process: util/process.h),
// whether it is alive or stopped, who holds a flock, its command line, its memory and CPU time
// (and a wait for it to go quiet), its threads and its children.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace space::proc {

// The fields of /proc/<who>/stat ("self" or a pid) from field 3 (the state) on: [0] is field 3.
// The command name (field 2) is in parentheses and may itself contain ") ", so the split starts
// after the last ')'. Empty if the file cannot be read or is malformed.
std::vector<std::string> stat_fields(const std::string& who);
// Field `n` (3 or more) of `f` as a number; nullopt if missing or not a number.
std::optional<uint64_t> stat_number(const std::vector<std::string>& f, size_t n);

// Start time of `pid` (clock ticks since boot), or nullopt if there is no such process.
std::optional<uint64_t> start_time(pid_t pid);
// True if `pid` exists, is not a zombie, and started at `start_time`.
bool is_alive(pid_t pid, uint64_t start_time);
// True if `pid` is stopped (SIGSTOP, SIGTSTP or a tracer): state T or t in /proc/PID/stat.
bool is_stopped(pid_t pid);
// The processes (other than this one) that hold a flock on the file at `path`, as each one's
// /proc/PID/fdinfo shows for an fd it has open on that file; a process waiting for the lock is
// not one. Processes this one may not inspect are not seen. Empty if the file does not exist.
std::vector<pid_t> flock_holders(const std::string& path);
// The command line of `pid`, its arguments joined by spaces; "" if it cannot be read.
std::string command_line(pid_t pid);

// A process's memory as /proc/PID/smaps_rollup reports it.
struct MemoryUse {
  uint64_t rss_bytes = 0;  // resident
  uint64_t pss_bytes = 0;  // resident, each shared page divided among its sharers
};
// Parses the text of a smaps_rollup file; nullopt when it has neither Rss nor Pss.
std::optional<MemoryUse> parse_smaps_rollup(std::string_view text);
// `pid`'s memory, nullopt when it cannot be read (gone, or not ours to read).
std::optional<MemoryUse> memory_use(pid_t pid);
// `pid`'s CPU time (user + system, /proc/PID/stat), in nanoseconds; nullopt when gone.
std::optional<uint64_t> cpu_time_ns(pid_t pid);

// `pid`'s CPU time to the nanosecond: the sum of its threads' /proc/PID/task/TID/schedstat (time
// on a CPU), or cpu_time_ns() where the kernel has no schedstat; nullopt when gone. Threads that
// ended no longer count.
std::optional<uint64_t> threads_cpu_time_ns(pid_t pid);

// What wait_quiet() saw.
struct Quiet {
  bool settled = false;         // a window passed in which `pid` used at most the share allowed
  double waited_ms = 0;         // from the call to its return
  uint64_t last_window_ns = 0;  // CPU time `pid` used in the last window
};
// Waits until `pid` used at most `max_share` of one CPU in each of `windows` windows of
// `window_ms` in a row, or until `limit_ms` passed (settled false), sampling
// threads_cpu_time_ns() once per window. Throws when `pid` is gone, or when `cancel_fd` (if >= 0)
// becomes readable (e.g. a SignalGuard's fd).
Quiet wait_quiet(pid_t pid, int window_ms, int windows, double max_share, int limit_ms,
                 int cancel_fd = -1);

// The children of every thread of `pid` (/proc/PID/task/*/children), in no particular order.
std::vector<pid_t> children_of(pid_t pid);
// The thread ids of `pid` (/proc/PID/task); empty if it has gone.
std::vector<pid_t> threads_of(pid_t pid);

}  // namespace space::proc
