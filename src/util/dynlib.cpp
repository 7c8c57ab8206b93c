// dlopen and dlsym with errors that name the fix; see dynlib.h.
#include "util/dynlib.h"

#include <dlfcn.h>

#include "util/error.h"

namespace space::dynlib {

void* open(const char* soname, const std::string& hint) {
  void* lib = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = ::dlerror();
    fail(std::string("cannot load ") + soname + (why ? std::string(": ") + why : ""), hint);
  }
  return lib;
}

void* symbol(std::initializer_list<void*> libs, const char* name, const char* libs_named,
             const std::string& hint) {
  for (void* lib : libs)
    if (void* p = ::dlsym(lib, name)) return p;
  fail(std::string(libs_named) + " lacks " + name, hint);
}

}  // namespace space::dynlib
