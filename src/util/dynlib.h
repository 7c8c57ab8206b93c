// Shared libraries loaded on first use (dlopen) rather than linked: what only a few commands
// need (libarchive for images and cp, OpenSSL for the broker and the credential helper) would
// otherwise be mapped and relocated at every start of every `space` process, the VMM's too. A
// library that is missing, or lacks a symbol, is an Error with the caller's install hint.
#pragma once
#include <initializer_list>
#include <string>

namespace space::dynlib {

// dlopen(soname, RTLD_NOW | RTLD_LOCAL); throws Error (with `hint`) if it cannot be loaded. The
// library stays loaded for the life of the process.
void* open(const char* soname, const std::string& hint);

// `name` from the first of `libs` that has it, cast to F; throws Error naming the libraries and
// `name` (with `hint`) when none does.
void* symbol(std::initializer_list<void*> libs, const char* name, const char* libs_named,
             const std::string& hint);
template <class F>
void bind(F& fn, std::initializer_list<void*> libs, const char* name, const char* libs_named,
          const std::string& hint) {
  fn = reinterpret_cast<F>(symbol(libs, name, libs_named, hint));
}

}  // namespace space::dynlib
