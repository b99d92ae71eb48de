"""Golden tests of loop-invariant code motion: invariant pure chains leave
``for`` and ``while`` loops; loads, ops using the loop's values, ops nested
in an ``if`` and regions that use loop values stay."""
from __future__ import annotations

import pytest
from opt.golden import check_body

from tilec.opt import hoist_loop_invariants as licm

CASES = {
    "invariant_chain_leaves_for": (
        """
        %r = for %x, %y, %x, [%x] : i32 {
        ^(%i: i32, %acc: i32):
          %k = constant {value = 3, type = i32} : i32
          %a = mul %y, %k : i32
          %b = add %a, %x : i32
          %v = add %acc, %i : i32
          %w = add %v, %b : i32
          yield [%w]
        }
        print [%r] {prefix = ""}
        """, """
        %k = constant {value = 3, type = i32} : i32
        %a = mul %y, %k : i32
        %b = add %a, %x : i32
        %r = for %x, %y, %x, [%x] : i32 {
        ^(%i: i32, %acc: i32):
          %v = add %acc, %i : i32
          %w = add %v, %b : i32
          yield [%w]
        }
        print [%r] {prefix = ""}
        """),
    "loads_and_nested_if_ops_stay": (
        """
        for %x, %y, %x, [] {
        ^(%i: i32):
          %v = load %p, _, _ : f32
          %r = if %c : i32 {
            %m = mul %x, %y : i32
            yield [%m]
          } {
            yield [%x]
          }
          print [%v, %r] {prefix = ""}
          yield []
        }
        """, None),
    "reduction_hoisted_only_when_its_region_is_invariant": (
        """
        for %x, %y, %x, [] {
        ^(%i: i32):
          %s = reduce [%t] {axis = 0} : i32 {
          ^(%l: i32, %m: i32):
            %q = add %l, %m : i32
            yield [%q]
          }
          %w = reduce [%t] {axis = 0} : i32 {
          ^(%l2: i32, %m2: i32):
            %q2 = add %l2, %i : i32
            yield [%q2]
          }
          print [%s, %w] {prefix = ""}
          yield []
        }
        """, """
        %s = reduce [%t] {axis = 0} : i32 {
        ^(%l: i32, %m: i32):
          %q = add %l, %m : i32
          yield [%q]
        }
        for %x, %y, %x, [] {
        ^(%i: i32):
          %w = reduce [%t] {axis = 0} : i32 {
          ^(%l2: i32, %m2: i32):
            %q2 = add %l2, %i : i32
            yield [%q2]
          }
          print [%s, %w] {prefix = ""}
          yield []
        }
        """),
    "while_regions_and_nested_loops": (
        """
        %r = while [%x] : i32 {
        ^(%a: i32):
          %lim = add %y, %y : i32
          %go = cmp %a, %lim {pred = "lt"} : i1
          condition %go, [%a]
        } {
        ^(%b: i32):
          %n = for %x, %y, %x, [%b] : i32 {
          ^(%i: i32, %acc: i32):
            %k = mul %x, %x : i32
            %s = add %acc, %k : i32
            yield [%s]
          }
          yield [%n]
        }
        print [%r] {prefix = ""}
        """, """
        %lim = add %y, %y : i32
        %r = while [%x] : i32 {
        ^(%a: i32):
          %go = cmp %a, %lim {pred = "lt"} : i1
          condition %go, [%a]
        } {
        ^(%b: i32):
          %k = mul %x, %x : i32
          %n = for %x, %y, %x, [%b] : i32 {
          ^(%i: i32, %acc: i32):
            %s = add %acc, %k : i32
            yield [%s]
          }
          yield [%n]
        }
        print [%r] {prefix = ""}
        """),
}


@pytest.mark.parametrize("name", CASES)
def test_licm(name):
    body, expected = CASES[name]
    check_body(licm, body, body if expected is None else expected)
