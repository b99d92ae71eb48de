"""Golden tests of CSE: equal pure computations merge; different attributes,
types or effects keep ops apart; a value from an inner region is not reused
outside it."""
from __future__ import annotations

import pytest
from opt.golden import check_body

from tilec.opt import eliminate_common_subexpressions as cse

CASES = {
    "same_op_same_operands_merge_transitively": (
        """
        %a = add %x, %y : i32
        %b = add %x, %y : i32
        %c1 = mul %a, %x : i32
        %c2 = mul %b, %x : i32
        print [%c1, %c2] {prefix = ""}
        """, """
        %a = add %x, %y : i32
        %c1 = mul %a, %x : i32
        print [%c1, %c1] {prefix = ""}
        """),
    "operand_order_and_op_class_matter": (
        """
        %a = sub %x, %y : i32
        %b = sub %y, %x : i32
        %d = add %x, %y : i32
        print [%a, %b, %d] {prefix = ""}
        """, None),
    "attributes_compare_exactly": (
        """
        %z = constant {value = 0.0, type = f32} : f32
        %n = constant {value = -0.0, type = f32} : f32
        %z2 = constant {value = 0.0, type = f32} : f32
        %i = constant {value = 1, type = i32} : i32
        %b = constant {value = true, type = i1} : i1
        %l = cmp %x, %y {pred = "lt"} : i1
        %g = cmp %x, %y {pred = "gt"} : i1
        print [%z, %n, %z2, %i, %b, %l, %g] {prefix = ""}
        """, """
        %z = constant {value = 0.0, type = f32} : f32
        %n = constant {value = -0.0, type = f32} : f32
        %i = constant {value = 1, type = i32} : i32
        %b = constant {value = true, type = i1} : i1
        %l = cmp %x, %y {pred = "lt"} : i1
        %g = cmp %x, %y {pred = "gt"} : i1
        print [%z, %n, %z, %i, %b, %l, %g] {prefix = ""}
        """),
    "result_types_matter": (
        """
        %a = constant {value = 1, type = i32} : i32
        %b = constant {value = 1, type = i64} : i64
        %s = splat %x {shape = (4,)} : tile<4xi32>
        %t2 = splat %x {shape = (2, 2)} : tile<2x2xi32>
        print [%a, %b, %s, %t2] {prefix = ""}
        """, None),
    "loads_are_not_merged": (
        """
        %a = load %p, _, _ : f32
        %b = load %p, _, _ : f32
        print [%a, %b] {prefix = ""}
        """, None),
    "outer_value_reused_inside_region": (
        """
        %a = add %x, %y : i32
        %r = for %x, %y, %x, [%x] : i32 {
        ^(%i: i32, %acc: i32):
          %b = add %x, %y : i32
          %s = add %acc, %b : i32
          yield [%s]
        }
        print [%r] {prefix = ""}
        """, """
        %a = add %x, %y : i32
        %r = for %x, %y, %x, [%x] : i32 {
        ^(%i: i32, %acc: i32):
          %s = add %acc, %a : i32
          yield [%s]
        }
        print [%r] {prefix = ""}
        """),
    "inner_value_not_reused_outside_or_in_sibling_region": (
        """
        %r = if %c : i32 {
          %a = mul %x, %y : i32
          yield [%a]
        } {
          %b = mul %x, %y : i32
          yield [%b]
        }
        %d = mul %x, %y : i32
        print [%r, %d] {prefix = ""}
        """, None),
    "reductions_with_regions_are_not_merged": (
        """
        %a = reduce [%t] {axis = 0} : i32 {
        ^(%l: i32, %m: i32):
          %s = add %l, %m : i32
          yield [%s]
        }
        %b = reduce [%t] {axis = 0} : i32 {
        ^(%l2: i32, %m2: i32):
          %s2 = add %l2, %m2 : i32
          yield [%s2]
        }
        print [%a, %b] {prefix = ""}
        """, None),
}


@pytest.mark.parametrize("name", CASES)
def test_cse(name):
    body, expected = CASES[name]
    check_body(cse, body, body if expected is None else expected)
