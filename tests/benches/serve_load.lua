-- wrk script for serve_load.py: one complete request per call, every answer checked.
-- Arguments after `--`: the run's prefix, the shape, and (for `get`) the task id to read:
--   send    A2A SendMessage, blocking: the demo worker's echo; the answer is the completed task
--   submit  A2A SendMessage with returnImmediately: the answer is the task as submitted
--   get     A2A GetTask of one finished task
--   call    MCP tools/call of `greet`, 2026-07-28 shape (its `_meta` and headers)
--   rest-send, rest-submit, rest-get   the three A2A shapes over HTTP+JSON
-- An answer counts as good only if it is HTTP 200 with a JSON-RPC result (for HTTP+JSON, the
-- body) holding what the shape expects and no `error`. `done` prints "bad answers: N" and the first bad
-- answer, so the runner can fail a run that got any.
local threads = {}
local counter = 0
local prefix = "x"
local shape = "send"
local task = ""
local expected = ""
bad = 0
first_bad = ""

function setup(thread)
  table.insert(threads, thread)
end

local rest = false

function init(args)
  prefix = args[1] or tostring(os.time())
  shape = args[2] or "send"
  task = args[3] or ""
  if string.sub(shape, 1, 5) == "rest-" then
    rest = true
    shape = string.sub(shape, 6)
  end
  if shape == "send" or shape == "get" then
    expected = '"TASK_STATE_COMPLETED"'
  elseif shape == "submit" then
    expected = '"task":'
  else
    expected = '"text":"Hello, ' .. prefix .. '-'
  end
end

local a2a_headers = {["Content-Type"] = "application/json", ["A2A-Version"] = "1.0"}

function request()
  counter = counter + 1
  local id = prefix .. '-' .. counter
  if shape == "send" or shape == "submit" then
    local config = ""
    if shape == "submit" then
      config = ',"configuration":{"returnImmediately":true}'
    end
    local params = '{"message":{"messageId":"' .. id .. '","role":"ROLE_USER","parts":[{"text":"hi"}]}' ..
      config .. '}'
    if rest then
      return wrk.format("POST", "/message:send", a2a_headers, params)
    end
    local body = '{"jsonrpc":"2.0","id":' .. counter .. ',"method":"SendMessage","params":' .. params .. '}'
    return wrk.format("POST", "/", a2a_headers, body)
  end
  if shape == "get" and rest then
    return wrk.format("GET", "/tasks/" .. task, {["A2A-Version"] = "1.0"})
  end
  if shape == "get" then
    local body = '{"jsonrpc":"2.0","id":' .. counter .. ',"method":"GetTask","params":{"id":"' .. task .. '"}}'
    return wrk.format("POST", "/", a2a_headers, body)
  end
  local headers = {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["MCP-Protocol-Version"] = "2026-07-28",
    ["Mcp-Method"] = "tools/call",
    ["Mcp-Name"] = "greet",
  }
  local body = '{"jsonrpc":"2.0","id":' .. counter .. ',"method":"tools/call","params":{"name":"greet",' ..
    '"arguments":{"name":"' .. id .. '"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",' ..
    '"io.modelcontextprotocol/clientCapabilities":{}}}}'
  return wrk.format("POST", "/mcp", headers, body)
end

function response(status, headers, body)
  local good = status == 200
    and (rest or string.find(body, '"result":', 1, true) ~= nil)
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
