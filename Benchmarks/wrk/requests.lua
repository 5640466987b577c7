-- wrk script for Benchmarks/load.sh: sends the requests assent-load prepared (--wrk-requests), one
-- X-PowerAuth-Token header value per line, each used once (a MAC token's nonce is single use), split among wrk's
-- threads. A thread whose share is used up stops. Arguments: FILE THREADS PATH.
local count = 0
function setup(thread)
   thread:set("index", count)
   count = count + 1
end

function init(args)
   local file, threads = args[1], tonumber(args[2])
   path = args[3]
   lines = {}
   local i = 0
   for line in io.lines(file) do
      if i % threads == index then lines[#lines + 1] = line end
      i = i + 1
   end
   position = 1
end

function request()
   local line = lines[position]
   if line == nil then
      wrk.thread:stop()
      return wrk.format("GET", "/health")
   end
   position = position + 1
   return wrk.format("POST", path, { ["Content-Type"] = "application/json", ["X-PowerAuth-Token"] = line }, "{}")
end
