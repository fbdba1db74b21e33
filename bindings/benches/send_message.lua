-- wrk script: a blocking JSON-RPC SendMessage with a fresh messageId per request (a repeated
-- one would be answered from the log without running the handler): the prefix is the run's
-- (given after `--`), the counter the request's. Every answer must be a completed task;
-- `done` prints how many were not ("not completed: N").
local threads = {}
local counter = 0
local prefix = "x"
bad = 0

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  prefix = args[1] or tostring(os.time())
end

function request()
  counter = counter + 1
  local body = '{"jsonrpc":"2.0","id":' .. counter .. ',"method":"SendMessage","params":{"message":' ..
    '{"messageId":"b-' .. prefix .. '-' .. counter .. '","role":"ROLE_USER","parts":[{"text":"hi"}]}}}'
  return wrk.format("POST", nil, {["Content-Type"] = "application/json", ["A2A-Version"] = "1.0"}, body)
end

function response(status, headers, body)
  if not string.find(body, "TASK_STATE_COMPLETED", 1, true) then
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local total = 0
  for _, thread in ipairs(threads) do
    total = total + thread:get("bad")
  end
  io.write("not completed: " .. total .. "\n")
end
