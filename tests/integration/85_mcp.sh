# Scenario: an agent host drives space through MCP. The official MCP TypeScript SDK
# (@modelcontextprotocol/sdk from the npm registry, pinned by tests/mcp/package-lock.json and
# installed once per lockfile into $SPACE_CACHE/npm, outside the clone) connects to `space mcp`
# over stdio (tests/mcp/client.mjs): it lists the tools, creates a sandbox in a Debian image, runs
# python3 -c 'print(6*7)', a shell line with stdin, and output past the bound; writes and reads
# text and binary files; lists, pauses, resumes, branches and destroys; gets errors as tool
# results; and then, confined with --sandbox, sees only exec, write_file and read_file. The
# sandbox its first session made without `keep` is gone when that session ends.
# Then bad input with no SDK: malformed JSON, an unknown method, a request before initialize, a
# message past the bound (the server goes on); and a client that vanishes, and a SIGTERM, each
# with a sandbox made in the session: the server ends and destroys it, leaving nothing.
source "$(dirname "$0")/lib.sh"
shared_template default
debian_image py

command -v node >/dev/null && command -v npm >/dev/null ||
  fail "node and npm are missing: apt-get install nodejs npm (scripts/deps.sh installs them)"

# The SDK, once per lockfile.
key=$(cat "$SRC/tests/mcp/package.json" "$SRC/tests/mcp/package-lock.json" | sha256sum | cut -c1-16)
npm_dir=${SPACE_CACHE:-/var/cache/space}/npm/$key
mkdir -p "$(dirname "$npm_dir")"
(
  flock 9
  [ -d "$npm_dir/node_modules/@modelcontextprotocol/sdk" ] && exit 0
  rm -rf "$npm_dir.tmp" && mkdir -p "$npm_dir.tmp"
  cp "$SRC/tests/mcp/package.json" "$SRC/tests/mcp/package-lock.json" "$npm_dir.tmp/"
  npm ci --prefix "$npm_dir.tmp" --no-audit --no-fund --loglevel=error >&2
  rm -rf "$npm_dir" && mv "$npm_dir.tmp" "$npm_dir"
) 9>"$(dirname "$npm_dir")/.lock" || fail "could not install the MCP SDK from npm"
mkdir -p "$TEST_ROOT/mcp"
cp "$SRC/tests/mcp/client.mjs" "$TEST_ROOT/mcp/"
ln -s "$npm_dir/node_modules" "$TEST_ROOT/mcp/node_modules"

SPACE_BIN=$SPACE_BIN SPACE_ROOT=$SPACE_ROOT MCP_IMAGE=py \
  timeout "$SPACE_TEST_TIMEOUT" node "$TEST_ROOT/mcp/client.mjs" >"$TEST_ROOT/client.out" 2>&1 ||
  fail "the MCP client failed: $(tail -20 "$TEST_ROOT/client.out")"
cat "$TEST_ROOT/client.out"
made=$(sed -n 's/^ok: create: sandbox \([0-9a-f]*\) .*/\1/p' "$TEST_ROOT/client.out")
kept=$(sed -n 's/^KEPT //p' "$TEST_ROOT/client.out")
[ -n "$made" ] && [ -n "$kept" ] || fail "the client named no sandboxes"
listing=$(space list)
! grep -q "^$made " <<<"$listing" || fail "sandbox $made, made without keep, outlived its session"
grep -q "^$kept .*running" <<<"$listing" || fail "sandbox $kept, made with keep, is gone: $listing"
expect_status 0 space destroy "$kept"

# Bad input, without the SDK: each line gets the spec's error and the server goes on.
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}'
{
  echo '{"jsonrpc":"2.0","id":0,"method":"tools/list"}'
  echo "$init"
  echo '{"jsonrpc":"2.0","id":2,"method":"tools/list"'
  echo '[{"jsonrpc":"2.0","id":3,"method":"ping"}]'
  echo '{"jsonrpc":"2.0","id":4,"method":"resources/list"}'
  echo '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"rm_rf"}}'
  head -c $((9 << 20)) /dev/zero | tr '\0' 'x'
  echo
  echo '{"jsonrpc":"2.0","id":6,"method":"ping"}'
} | space mcp >"$TEST_ROOT/bad.out" || fail "space mcp exited $? on bad input"
expect_line() {  # ID CODE: the reply to id ID has error CODE (or none, for "ok")
  python3 - "$TEST_ROOT/bad.out" "$1" "$2" <<'PY' || fail "bad input: no reply to id $2 with $3: $(cut -c1-300 "$TEST_ROOT/bad.out")"
import json, sys
replies = [json.loads(l) for l in open(sys.argv[1])]
want_id = None if sys.argv[2] == "null" else int(sys.argv[2])
for r in replies:
    if r.get("id") == want_id:
        code = r.get("error", {}).get("code")
        if (sys.argv[3] == "ok" and "result" in r) or str(code) == sys.argv[3]:
            sys.exit(0)
sys.exit(1)
PY
}
expect_line 0 -32600  # before initialize
expect_line 1 ok
expect_line null -32700  # not JSON
expect_line null -32600  # a batch; and the 9 MiB line
[ "$(grep -c '"id":null,"error":{"code":-32600' "$TEST_ROOT/bad.out")" = 2 ] ||
  fail "the batch and the long line did not both get -32600: $(cut -c1-200 "$TEST_ROOT/bad.out")"
expect_line 4 -32601
expect_line 5 -32602
expect_line 6 ok
echo "bad input: -32700, -32600 (before initialize, a batch, 9 MiB), -32601, -32602; ping still answered"

# A client that vanishes, then one whose server gets SIGTERM: the sandbox made in the session
# goes with it.
for how in vanish sigterm; do
  coproc MCP { exec "$SPACE_BIN" mcp 2>>"$TEST_ROOT/mcp-$how.log"; }
  server=$MCP_PID
  echo "$init" >&"${MCP[1]}"
  echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create","arguments":{}}}' >&"${MCP[1]}"
  read -r -t "$SPACE_TEST_TIMEOUT" _ <&"${MCP[0]}" || fail "$how: no reply to initialize"
  read -r -t "$SPACE_TEST_TIMEOUT" reply <&"${MCP[0]}" || fail "$how: no reply to create"
  id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["result"]["structuredContent"]["id"])' "$reply") ||
    fail "$how: create failed: $reply"
  status_of "$id" | grep -q running || fail "$how: sandbox $id is not running"
  if [ $how = vanish ]; then
    eval "exec ${MCP[1]}>&- ${MCP[0]}<&-"  # the client's ends of the pipes
  else
    kill -TERM "$server"
  fi
  wait_until 30 sh -c "! kill -0 $server 2>/dev/null"
  wait "$server" 2>/dev/null || true
  [ ! -e "$SPACE_ROOT/store/sandboxes/$id" ] || fail "$how: sandbox $id outlived its MCP session: $(cat "$TEST_ROOT/mcp-$how.log")"
  echo "$how: the server ended and destroyed $id"
done
echo "PASS"
