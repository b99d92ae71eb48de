"""Golden tests of dead code elimination: unused pure ops go (chains, inside
regions, reductions), effects stay, and self-feeding loop-carried values of
``for`` are dropped while the ones that matter stay."""
from __future__ import annotations

import pytest
from opt.golden import check_body

from tilec.opt import eliminate_dead_code as dce

CASES = {
    "unused_chain_goes_effects_stay": (
        """
        %a = add %x, %y : i32
        %b = mul %a, %a : i32
        %v = load %p, _, _ : f32
        %k = constant {value = 1.0, type = f32} : f32
        store %p, %k, _
        """, """
        %v = load %p, _, _ : f32
        %k = constant {value = 1.0, type = f32} : f32
        store %p, %k, _
        """),
    "dead_ops_inside_regions_and_dead_reductions": (
        """
        %s = reduce [%t] {axis = 0} : i32 {
        ^(%l: i32, %m: i32):
          %q = add %l, %m : i32
          yield [%q]
        }
        %r = if %c : i32 {
          %unused = mul %x, %x : i32
          yield [%x]
        } {
          yield [%y]
        }
        print [%r] {prefix = ""}
        """, """
        %r = if %c : i32 {
          yield [%x]
        } {
          yield [%y]
        }
        print [%r] {prefix = ""}
        """),
    "value_used_only_in_a_region_is_live": (
        """
        %a = add %x, %y : i32
        %r = if %c : i32 {
          yield [%a]
        } {
          yield [%y]
        }
        print [%r] {prefix = ""}
        """, None),
    "self_feeding_carried_values_are_dropped": (
        """
        %one = constant {value = 1, type = i32} : i32
        %f0 = constant {value = 0.0, type = f32} : f32
        %r, %count, %same = for %x, %y, %one, [%f0, %x, %y] : f32, i32, i32 {
        ^(%i: i32, %acc: f32, %n: i32, %s: i32):
          %v = load %p, _, _ : f32
          %a = add %acc, %v : f32
          %n2 = add %n, %one : i32
          yield [%a, %n2, %s]
        }
        store %p, %r, _
        """, """
        %one = constant {value = 1, type = i32} : i32
        %f0 = constant {value = 0.0, type = f32} : f32
        %r = for %x, %y, %one, [%f0] : f32 {
        ^(%i: i32, %acc: f32):
          %v = load %p, _, _ : f32
          %a = add %acc, %v : f32
          yield [%a]
        }
        store %p, %r, _
        """),
    "carried_values_feeding_live_ones_or_effects_stay": (
        """
        %one = constant {value = 1, type = i32} : i32
        %r, %n, %m = for %x, %y, %one, [%x, %y, %x] : i32, i32, i32 {
        ^(%i: i32, %a: i32, %b: i32, %e: i32):
          %a2 = add %a, %b : i32
          %b2 = add %b, %one : i32
          print [%e] {prefix = ""}
          yield [%a2, %b2, %e]
        }
        print [%r] {prefix = ""}
        """, None),
    "loop_without_live_results_keeps_its_effects": (
        """
        %one = constant {value = 1, type = i32} : i32
        %r = for %x, %y, %one, [%x] : i32 {
        ^(%i: i32, %a: i32):
          %a2 = add %a, %one : i32
          print [%i] {prefix = ""}
          yield [%a2]
        }
        """, """
        %one = constant {value = 1, type = i32} : i32
        for %x, %y, %one, [] {
        ^(%i: i32):
          print [%i] {prefix = ""}
          yield []
        }
        """),
}


@pytest.mark.parametrize("name", CASES)
def test_dce(name):
    body, expected = CASES[name]
    check_body(dce, body, body if expected is None else expected)
