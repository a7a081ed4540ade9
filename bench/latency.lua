-- Each request's own latency, for wrk runs with one connection per thread (-tN -cN).
--
-- wrk 4 fills in for requests a thread "missed" (fewer than the rate it calibrated in its first
-- half second) by recording that many extra samples at the run's maximum latency, so a single
-- hiccup of the load generator itself (on a shared machine, a thread not scheduled for a moment)
-- turns its p99 into its maximum. This script times every request from the moment wrk asks for
-- it to the moment its response is complete, and prints the distribution of those times as one
-- line: `LATENCY {"requests": N, "p50_ms": …, "p90_ms": …, "p99_ms": …, "p999_ms": …, "max_ms": …}`.
-- One connection per thread makes the pairing of a request with its response exact.

local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } mailshelf_timespec;
int clock_gettime(int clock_id, mailshelf_timespec *tp);
]]
local CLOCK_MONOTONIC = 1
local now_ts = ffi.new("mailshelf_timespec")

local function now_us()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, now_ts)
  return tonumber(now_ts.tv_sec) * 1e6 + tonumber(now_ts.tv_nsec) / 1e3
end

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

-- In each thread's own Lua state.
samples = {}
local started = nil

function request()
  started = now_us()
  return wrk.format()
end

function response(status, headers, body)
  if started then
    samples[#samples + 1] = now_us() - started
    started = nil
  end
end

function done(summary, latency, requests)
  local all = {}
  for _, t in ipairs(threads) do
    for _, v in ipairs(t:get("samples")) do
      all[#all + 1] = v
    end
  end
  table.sort(all)
  local function at(p)
    if #all == 0 then return 0 end
    local i = math.max(1, math.ceil(#all * p / 100))
    return all[i] / 1000
  end
  io.write(string.format(
    'LATENCY {"requests": %d, "p50_ms": %.3f, "p90_ms": %.3f, "p99_ms": %.3f, "p999_ms": %.3f, "max_ms": %.3f}\n',
    #all, at(50), at(90), at(99), at(99.9), at(100)))
end
