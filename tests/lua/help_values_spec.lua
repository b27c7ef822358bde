-- help_values_spec.lua — help(value) finds every documented public
-- function and class by its value, as help("name") does by name, also those of the
-- modules loaded on first use (ember.autocast, ember.linalg, ember.amp, ember.distributed),
-- whose values the list of public values did not hold.
local ember = require "ember"
local help = require "ember.help"

describe("help(value)", function()
  for _, name in ipairs{
    "ember.autocast", "ember.linalg.norm", "ember.linalg.svd", "ember.amp.GradScaler", "ember.amp.autocast",
    "ember.distributed.init_process_group", "ember.save_checkpoint", "ember.zeros", "ember.nn.Linear",
    "ember.nn.functional.cross_entropy", "ember.optim.AdamW", "ember.data.DataLoader", "ember.plot.line",
  } do
    it("finds " .. name .. " by its value, as by its name", function()
      local value = assert(load("local ember = ...; return " .. name))(ember)
      assert.is_not_nil(value)
      local by_name = help.lookup(name)
      assert.is_not_nil(by_name, "no entry named " .. name)
      local by_value, qualified = help.lookup(value)
      assert.is_not_nil(by_value, "help(" .. name .. ") found nothing")
      assert.are.equal(by_name, by_value)
      assert.is_string(qualified)
    end)
  end

  it("finds an instance's class (a GradScaler made by the lazily loaded ember.amp)", function()
    local e = help.lookup(ember.amp.GradScaler({enabled = false}))
    assert.are.equal(help.lookup("ember.amp.GradScaler"), e)
  end)

  it("still says so for a value that is not public", function()
    assert.is_nil(help.lookup(function() end))
  end)
end)
