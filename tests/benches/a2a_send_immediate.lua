-- wrk script for mcp_vs_python_sdk.py's floor row: one A2A `SendMessage` with
-- `returnImmediately` per request, to `agentlog serve` with no worker. The bridge checks the
-- request, appends its command to the log and answers the submitted task: the least any durable
-- call through agentlog costs (a tool call does this, then a worker's claim and result).
-- Arguments after `--`: the run's prefix (the era argument the MCP script takes is ignored).
-- An answer counts as good only if it is HTTP 200 with a JSON-RPC result holding the task
-- `TASK_STATE_SUBMITTED` and no JSON-RPC `error`; `done` prints "bad answers: N" as
-- mcp_tools_call.lua does.
local threads = {}
local counter = 0
local prefix = "x"
bad = 0
first_bad = ""

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  prefix = args[1] or tostring(os.time())
end

function request()
  counter = counter + 1
  local headers = {
    ["Content-Type"] = "application/json",
    ["A2A-Version"] = "1.0",
  }
  local body = '{"jsonrpc":"2.0","id":' .. counter .. ',"method":"SendMessage","params":{"message":' ..
    '{"messageId":"' .. prefix .. '-' .. counter .. '","role":"ROLE_USER","parts":[{"text":"hi"}]},' ..
    '"configuration":{"returnImmediately":true}}}'
  return wrk.format("POST", nil, headers, body)
end

function response(status, headers, body)
  local good = status == 200
    and string.find(body, '"result":', 1, true) ~= nil
    and string.find(body, 'TASK_STATE_SUBMITTED', 1, true) ~= nil
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
