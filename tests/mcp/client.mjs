// The MCP test client: the official MCP TypeScript SDK (@modelcontextprotocol/sdk, its Client and
// StdioClientTransport, pinned by package-lock.json) drives `space mcp` as an agent host would.
// Run by tests/integration/85_mcp.sh with SPACE_BIN, SPACE_ROOT and MCP_IMAGE (a Debian image
// with python3) set. Prints one line per check and exits 1 on the first that fails; prints the
// ids it kept (KEPT <id>) for the caller to check and destroy.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const space = process.env.SPACE_BIN;
const root = process.env.SPACE_ROOT;
const image = process.env.MCP_IMAGE;
assert.ok(space && root && image, "SPACE_BIN, SPACE_ROOT and MCP_IMAGE must be set");

async function connect(extra = []) {
  const transport = new StdioClientTransport({
    command: space,
    args: ["--root", root, "mcp", ...extra],
    env: process.env,
    stderr: "inherit",
  });
  const client = new Client({ name: "space-integration-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

function ok(what) {
  console.log(`ok: ${what}`);
}

async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args });
  assert.equal(r.isError, false, `${name} failed: ${JSON.stringify(r.content)}`);
  return r.structuredContent;
}

// 1. The whole surface, as a full (unconfined) server.
const client = await connect();
ok(`connected: ${client.getServerVersion().name} ${client.getServerVersion().version}`);
const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
assert.deepEqual(names, ["branch", "create", "destroy", "exec", "list", "pause", "read_file",
                         "resume", "write_file"]);
for (const t of tools) assert.equal(t.inputSchema.type, "object", `${t.name}'s inputSchema`);
ok(`tools/list: ${names.join(", ")}`);

const made = await call(client, "create", { image });
const id = made.id;
assert.match(id, /^[0-9a-f]{12}$/);
ok(`create: sandbox ${id} (${made.engine})`);

const py = await call(client, "exec", { sandbox: id, command: ["python3", "-c", "print(6*7)"] });
assert.equal(py.exit_code, 0);
assert.equal(py.stdout, "42\n");
assert.equal(py.truncated, false);
ok("exec: python3 -c 'print(6*7)' printed 42");

const sh = await call(client, "exec", {
  sandbox: id, shell: "read x; echo \"got $x\"; echo oops >&2; exit 3", stdin: "hello\n",
});
assert.equal(sh.exit_code, 3);
assert.equal(sh.stdout, "got hello\n");
assert.equal(sh.stderr, "oops\n");
ok("exec: a shell line with stdin, stderr and exit code 3");

const big = await call(client, "exec", { sandbox: id, command: ["head", "-c", "3000000", "/dev/zero"] });
assert.equal(big.truncated, true);
assert.equal(big.stdout_bytes, 3000000);
ok(`exec: 3 MB of output truncated to ${big.stdout.length} characters`);

await call(client, "write_file", { sandbox: id, path: "/root/note.txt", content: "héllo\n" });
const back = await call(client, "read_file", { sandbox: id, path: "/root/note.txt" });
assert.equal(back.encoding, "utf-8");
assert.equal(back.content, "héllo\n");
const bytes = Buffer.from([0, 255, 1, 254, 10]).toString("base64");
await call(client, "write_file", { sandbox: id, path: "/root/bin.dat", content: bytes, encoding: "base64" });
const bin = await call(client, "read_file", { sandbox: id, path: "/root/bin.dat" });
assert.equal(bin.encoding, "base64");
assert.equal(bin.content, bytes);
const cat = await call(client, "exec", { sandbox: id, command: ["python3", "-c", "print(open('/root/note.txt').read().strip())"] });
assert.equal(cat.stdout, "héllo\n");
ok("write_file and read_file: text and binary, seen by the sandbox's own python3");

const listed = await call(client, "list", {});
assert.ok(listed.sandboxes.some((s) => s.id === id && s.status === "running"));
await call(client, "pause", { sandbox: id });
const paused = await call(client, "list", {});
assert.equal(paused.sandboxes.find((s) => s.id === id).status, "paused");
await call(client, "resume", { sandbox: id });
ok("list, pause and resume");

const branched = await call(client, "branch", { sandbox: id, count: 1 });
assert.equal(branched.ids.length, 1);
const child = branched.ids[0];
const inChild = await call(client, "read_file", { sandbox: child, path: "/root/note.txt" });
assert.equal(inChild.content, "héllo\n");
ok(`branch: ${child} has the parent's file`);

// Errors are tool results with space's message and hint, not protocol errors or a crash.
const missing = await client.callTool({ name: "exec", arguments: { sandbox: "nosuchbox", command: ["true"] } });
assert.equal(missing.isError, true);
assert.match(missing.content[0].text, /does not exist/);
const bad = await client.callTool({ name: "exec", arguments: { sandbox: id } });
assert.equal(bad.isError, true);
assert.match(bad.content[0].text, /command/);
await assert.rejects(client.callTool({ name: "no_such_tool", arguments: {} }), /Unknown tool/);
ok("errors: a missing sandbox, missing arguments and an unknown tool");

const kept = await call(client, "create", { image, keep: true });
console.log(`KEPT ${kept.id}`);
await call(client, "destroy", { sandbox: child });
ok(`destroy: ${child}; ${kept.id} kept`);
await client.close();  // ends the session: the server destroys ${id}, made without keep
ok("closed: the server ends the session");

// 2. Confined to the kept sandbox: no lifecycle tools, no `sandbox` argument.
const confined = await connect(["--sandbox", kept.id, "--max-output", "64K"]);
const ctools = (await confined.listTools()).tools.map((t) => t.name).sort();
assert.deepEqual(ctools, ["exec", "read_file", "write_file"]);
for (const t of (await confined.listTools()).tools)
  assert.ok(!("sandbox" in (t.inputSchema.properties ?? {})), `${t.name} takes no sandbox`);
const host = await call(confined, "exec", { command: ["hostname"] });
assert.equal(host.stdout, `${kept.id}\n`);
const small = await call(confined, "exec", { command: ["head", "-c", "100000", "/dev/zero"] });
assert.equal(small.truncated, true);
assert.equal(small.stdout.length, 65536);
await assert.rejects(confined.callTool({ name: "create", arguments: {} }), /Unknown tool/);
const other = await confined.callTool({ name: "exec", arguments: { sandbox: id, command: ["true"] } });
assert.equal(other.isError, true);
assert.match(other.content[0].text, /unknown argument "sandbox"/);
await confined.close();
ok(`--sandbox ${kept.id}: exec, read_file and write_file only, output bounded to 64 KiB`);
