-- Pointer stores, as a garbage collector's write barrier sees them: trees of tables built and
-- dropped (binary-trees), a table of records rewritten in place, closures writing upvalues.
local function tree(d)
  if d == 0 then return {} end
  return { tree(d - 1), tree(d - 1) }
end
local function check(t)
  if not t[1] then return 1 end
  return 1 + check(t[1]) + check(t[2])
end
local total = 0
for i = 1, 40 do total = total + check(tree(10)) end
local recs = {}
for i = 1, 20000 do recs[i] = { id = i, next = false, name = "r" .. (i % 100) } end
for round = 1, 5 do
  for i = 1, #recs do recs[i].next = recs[(i * 7 + round) % #recs + 1] end
end
local function counter()
  local n, last = 0, nil
  return function(x) n = n + 1; last = x; return n end
end
local c = counter()
for i = 1, 100000 do c(recs[i % #recs + 1]) end
print(total, recs[1].next.id, c(nil))
