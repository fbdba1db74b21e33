-- wrk script: a blocking JSON-RPC SendMessage with a fresh messageId per request (a repeated
-- one would be answered from the log without running the handler).
local counter = 0
local prefix = tostring(math.random(1, 1e9))

function request()
  counter = counter + 1
  local body = '{"jsonrpc":"2.0","id":' .. counter .. ',"method":"SendMessage","params":{"message":' ..
    '{"messageId":"b-' .. prefix .. '-' .. counter .. '","role":"ROLE_USER","parts":[{"text":"hi"}]}}}'
  return wrk.format("POST", nil, {["Content-Type"] = "application/json", ["A2A-Version"] = "1.0"}, body)
end
