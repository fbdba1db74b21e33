-- wrk script for mcp_vs_python_sdk.py: one complete MCP `tools/call` of the `greet` tool per
-- request, without a session. Arguments after `--`: the run's prefix, then the shape:
--   modern  (default) the 2026-07-28 shape: `_meta` with the protocol version and the client's
--           capabilities, and the headers MCP-Protocol-Version, Mcp-Method, Mcp-Name
--   legacy  a bare 2025-era `tools/call` with no MCP header (no `initialize` before it, which
--           a stateless server does not need)
--   floor   not MCP: an A2A `SendMessage` with `returnImmediately` (the bench's floor row, to
--           `agentlog serve` with no worker: one command on the log and the answer)
-- Each request greets `<prefix>-<n>`; an answer counts as good only if it is HTTP 200 with a
-- JSON-RPC result whose text block says `Hello, <prefix>-` (floor: the task submitted) and has
-- no `"isError":true` and no JSON-RPC `error`. `done` prints "bad answers: N" and the first bad
-- answer, so the runner can fail a run that got any.
local threads = {}
local counter = 0
local prefix = "x"
local era = "modern"
local expected = ""
bad = 0
first_bad = ""

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  prefix = args[1] or tostring(os.time())
  era = args[2] or "modern"
  expected = '"text":"Hello, ' .. prefix .. '-'
  if era == "floor" then
    expected = '"TASK_STATE_SUBMITTED"'
  end
end

local modern_meta = ',"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",' ..
  '"io.modelcontextprotocol/clientCapabilities":{}}'

function request()
  counter = counter + 1
  if era == "floor" then
    local body = '{"jsonrpc":"2.0","id":' .. counter .. ',"method":"SendMessage","params":{"message":' ..
      '{"messageId":"' .. prefix .. '-' .. counter .. '","role":"ROLE_USER","parts":[{"text":"hi"}]},' ..
      '"configuration":{"returnImmediately":true}}}'
    return wrk.format("POST", nil, {["Content-Type"] = "application/json", ["A2A-Version"] = "1.0"}, body)
  end
  local headers = {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
  }
  local meta = ""
  if era == "modern" then
    headers["MCP-Protocol-Version"] = "2026-07-28"
    headers["Mcp-Method"] = "tools/call"
    headers["Mcp-Name"] = "greet"
    meta = modern_meta
  end
  local body = '{"jsonrpc":"2.0","id":' .. counter .. ',"method":"tools/call","params":{"name":"greet",' ..
    '"arguments":{"name":"' .. prefix .. '-' .. counter .. '"}' .. meta .. '}}'
  return wrk.format("POST", nil, headers, body)
end

function response(status, headers, body)
  local good = status == 200
    and string.find(body, '"result":', 1, true) ~= nil
    and string.find(body, expected, 1, true) ~= nil
    and string.find(body, '"isError":true', 1, true) == nil
    and string.find(body, '"error":', 1, true) == nil
  if not good then
    bad = bad + 1
    if first_bad == "" then
      first_bad = status .. " " .. string.sub(body, 1, 300)
    end
  end
end

function done(summary, latency, requests)
  local total = 0
  local sample = ""
  for _, thread in ipairs(threads) do
    total = total + thread:get("bad")
    if sample == "" then
      sample = thread:get("first_bad")
    end
  end
  io.write("bad answers: " .. total .. "\n")
  if total > 0 then
    io.write("first bad answer: " .. sample .. "\n")
  end
end
