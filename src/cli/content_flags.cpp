// The content flags of create and run; see content_flags.h.
#include "cli/content_flags.h"

#include "core/copy.h"
#include "cred/grants.h"
#include "image/image.h"

namespace space::cli {

void ContentFlags::add(CLI::App* cmd, const std::string& copied_when) {
  cmd->add_option("--disk-size", disk_size,
                  "Grow the sandbox's copy of the image's disk to this size, e.g. 20G, and "
                  "limit what it keeps in the store to that plus its root disk, RAM and 64 MiB");
  cmd->add_option("--secret", secrets,
                  "Grant this secret to the sandbox: NAME[:ttl=DURATION][:uses=N] (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--inject", inject,
                  "Bind secret NAME to these hosts: NAME=HOST[:PORT][,HOST...] (repeatable). The "
                  "sandbox gets a placeholder, swapped for the value only in HTTPS requests to "
                  "them; --net must allow them")
      ->allow_extra_args(false);
  cmd->add_option("--copy", copies,
                  "Copy HOST_PATH into the sandbox at GUEST_PATH " + copied_when +
                      ": HOST_PATH:GUEST_PATH (repeatable)")
      ->allow_extra_args(false);
}

void ContentFlags::apply(core::CreateOptions& opts) const {
  if (!disk_size.empty()) opts.disk_bytes = image::parse_disk_size(disk_size);
  for (const auto& s : secrets) opts.secrets.push_back(cred::parse_grant_spec(s));
  for (const auto& i : inject) cred::apply_inject_flag(opts.secrets, i);
  for (const auto& c : copies) opts.copies.push_back(core::parse_copy_spec(c));
}

}  // namespace space::cli
