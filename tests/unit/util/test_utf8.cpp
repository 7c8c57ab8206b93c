// Unit tests for util/utf8's printable(): what a guest, an image or a network peer wrote reaches
// the operator's terminal without the bytes a terminal acts on, and text stays readable.
#include <doctest/doctest.h>

#include <string>

#include "util/utf8.h"

using space::utf8::printable;

TEST_CASE("printable keeps text and escapes what a terminal would act on") {
  CHECK(printable("plain text, tabs\tand\nnewlines") == "plain text, tabs\tand\nnewlines");
  CHECK(printable("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x90\xa7") ==
        "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x90\xa7");
  // ESC ]0; retitles the window; ESC [2J clears the screen; \r rewrites the line.
  CHECK(printable("\x1b]0;owned\x07\x1b[2J\rfake") == "\\x1b]0;owned\\x07\\x1b[2J\\x0dfake");
  CHECK(printable(std::string("nul\0here", 8)) == "nul\\x00here");
  CHECK(printable("del\x7f") == "del\\x7f");
  // C1 CSI (U+009B) as UTF-8, and as a bare byte.
  CHECK(printable("\xc2\x9b"
                  "31m") == "\\xc2\\x9b31m");
  CHECK(printable("\x9b"
                  "31m") == "\\x9b31m");
  CHECK(printable("\xc2\xa0") == "\xc2\xa0");  // U+00A0 is printable
  // Malformed: truncated, overlong, surrogate.
  CHECK(printable("\xe2\x9c") == "\\xe2\\x9c");
  CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");
}
