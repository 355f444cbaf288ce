local function fib(n) if n < 2 then return n end return fib(n-1) + fib(n-2) end
print(fib(27))
local t = {}
for i = 1, 20000 do t[#t+1] = tostring(i * 7919 % 20011) end
table.sort(t)
print(t[1], t[#t])
local s = 0
for i = 1, 300000 do s = s + (i % 7) * 3 end
print(s, pcall(error, "boom"))
