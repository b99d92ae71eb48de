"""Golden tests of canonicalize: every identity fires where exact, and the
look-alikes that are not exact (float ``x + 0.0``, ``x * 0.0``, ``x - x``,
``x == x``) are left alone."""
from __future__ import annotations

import pytest
from opt.golden import check_body

from tilec.opt import canonicalize

CASES = {
    "int_add_zero_both_sides": (
        """
        %z = constant {value = 0, type = i32} : i32
        %r = add %x, %z : i32
        %s = add %z, %x : i32
        print [%r, %s] {prefix = ""}
        """, """
        %z = constant {value = 0, type = i32} : i32
        print [%x, %x] {prefix = ""}
        """),
    "float_add_pos_zero_is_not_identity": (
        """
        %z = constant {value = 0.0, type = f32} : f32
        %r = add %f, %z : f32
        print [%r] {prefix = ""}
        """, None),
    "float_add_neg_zero_is_identity": (
        """
        %z = constant {value = -0.0, type = f32} : f32
        %r = add %f, %z : f32
        %s = add %z, %f : f32
        print [%r, %s] {prefix = ""}
        """, """
        %z = constant {value = -0.0, type = f32} : f32
        print [%f, %f] {prefix = ""}
        """),
    "float_sub_pos_zero_is_identity_neg_zero_is_not": (
        """
        %z = constant {value = 0.0, type = f32} : f32
        %n = constant {value = -0.0, type = f32} : f32
        %r = sub %f, %z : f32
        %s = sub %f, %n : f32
        print [%r, %s] {prefix = ""}
        """, """
        %z = constant {value = 0.0, type = f32} : f32
        %n = constant {value = -0.0, type = f32} : f32
        %s = sub %f, %n : f32
        print [%f, %s] {prefix = ""}
        """),
    "int_sub_zero_but_not_zero_minus_x": (
        """
        %z = constant {value = 0, type = u8} : u8
        %r = sub %u, %z : u8
        %s = sub %z, %u : u8
        print [%r, %s] {prefix = ""}
        """, """
        %z = constant {value = 0, type = u8} : u8
        %s = sub %z, %u : u8
        print [%u, %s] {prefix = ""}
        """),
    "mul_one_int_and_float": (
        """
        %one = constant {value = 1, type = i32} : i32
        %fone = constant {value = 1.0, type = f16} : f16
        %r = mul %one, %x : i32
        %s = mul %h, %fone : f16
        print [%r, %s] {prefix = ""}
        """, """
        %one = constant {value = 1, type = i32} : i32
        %fone = constant {value = 1.0, type = f16} : f16
        print [%x, %h] {prefix = ""}
        """),
    "int_mul_zero_is_zero_float_is_not": (
        """
        %z = constant {value = 0, type = tile<4xi32>} : tile<4xi32>
        %fz = constant {value = 0.0, type = f32} : f32
        %r = mul %t, %z : tile<4xi32>
        %s = mul %f, %fz : f32
        print [%r, %s] {prefix = ""}
        """, """
        %z = constant {value = 0, type = tile<4xi32>} : tile<4xi32>
        %fz = constant {value = 0.0, type = f32} : f32
        %r = constant {value = 0, type = tile<4xi32>} : tile<4xi32>
        %s = mul %f, %fz : f32
        print [%r, %s] {prefix = ""}
        """),
    "div_one_but_not_one_div": (
        """
        %one = constant {value = 1, type = i32} : i32
        %fone = constant {value = 1.0, type = f32} : f32
        %r = div %x, %one : i32
        %s = div %f, %fone : f32
        %q = div %one, %x : i32
        print [%r, %s, %q] {prefix = ""}
        """, """
        %one = constant {value = 1, type = i32} : i32
        %fone = constant {value = 1.0, type = f32} : f32
        %q = div %one, %x : i32
        print [%x, %f, %q] {prefix = ""}
        """),
    "double_negation_and_not": (
        """
        %a = neg %f : f32
        %b = neg %a : f32
        %m = neg %x : i32
        %n = neg %m : i32
        %c1 = not %c : i1
        %c2 = not %c1 : i1
        print [%b, %n, %c2, %a] {prefix = ""}
        """, """
        %a = neg %f : f32
        %m = neg %x : i32
        %c1 = not %c : i1
        print [%f, %x, %c, %a] {prefix = ""}
        """),
    "neg_of_not_is_kept": (
        """
        %a = not %x : i32
        %b = neg %a : i32
        print [%b] {prefix = ""}
        """, None),
    "select_known_condition_and_same_branches": (
        """
        %yes = constant {value = true, type = i1} : i1
        %no = constant {value = false, type = i1} : i1
        %a = select %yes, %x, %y : i32
        %b = select %no, %x, %y : i32
        %s = select %c, %f, %f : f32
        %k = select %c, %x, %y : i32
        print [%a, %b, %s, %k] {prefix = ""}
        """, """
        %yes = constant {value = true, type = i1} : i1
        %no = constant {value = false, type = i1} : i1
        %k = select %c, %x, %y : i32
        print [%x, %y, %f, %k] {prefix = ""}
        """),
    "compare_identical_ints_but_not_floats": (
        """
        %e = cmp %x, %x {pred = "eq"} : i1
        %l = cmp %x, %x {pred = "lt"} : i1
        %g = cmp %t, %t {pred = "ge"} : tile<4xi1>
        %n = cmp %x, %x {pred = "ne"} : i1
        %fe = cmp %f, %f {pred = "eq"} : i1
        %xy = cmp %x, %y {pred = "eq"} : i1
        print [%e, %l, %g, %n, %fe, %xy] {prefix = ""}
        """, """
        %e = constant {value = true, type = i1} : i1
        %l = constant {value = false, type = i1} : i1
        %g = constant {value = true, type = tile<4xi1>} : tile<4xi1>
        %n = constant {value = false, type = i1} : i1
        %fe = cmp %f, %f {pred = "eq"} : i1
        %xy = cmp %x, %y {pred = "eq"} : i1
        print [%e, %l, %g, %n, %fe, %xy] {prefix = ""}
        """),
    "int_self_cancellation_but_not_float": (
        """
        %a = sub %x, %x : i32
        %b = xor %u, %u : u8
        %d = and %x, %x : i32
        %e = or %c, %c : i1
        %fs = sub %f, %f : f32
        print [%a, %b, %d, %e, %fs] {prefix = ""}
        """, """
        %a = constant {value = 0, type = i32} : i32
        %b = constant {value = 0, type = u8} : u8
        %fs = sub %f, %f : f32
        print [%a, %b, %x, %c, %fs] {prefix = ""}
        """),
    "addptr_zero_offset": (
        """
        %z = constant {value = 0, type = i64} : i64
        %q = addptr %p, %z : ptr<f32>
        %r = addptr %p, %x : ptr<f32>
        print [%q, %r] {prefix = ""}
        """, """
        %z = constant {value = 0, type = i64} : i64
        %r = addptr %p, %x : ptr<f32>
        print [%p, %r] {prefix = ""}
        """),
    "cast_to_same_type_only": (
        """
        %a = cast %f {to = f32} : f32
        %b = bitcast %x {to = i32} : i32
        %d = cast %f {to = f16} : f16
        print [%a, %b, %d] {prefix = ""}
        """, """
        %d = cast %f {to = f16} : f16
        print [%f, %x, %d] {prefix = ""}
        """),
    "broadcast_same_shape_and_chains": (
        """
        %a = broadcast %t {shape = (4,)} : tile<4xi32>
        %e = expand_dims %t {axis = 1} : tile<4x1xi32>
        %b1 = broadcast %e {shape = (4, 1)} : tile<4x1xi32>
        %b2 = broadcast %b1 {shape = (4, 3)} : tile<4x3xi32>
        print [%a, %b2] {prefix = ""}
        """, """
        %e = expand_dims %t {axis = 1} : tile<4x1xi32>
        %b2 = broadcast %e {shape = (4, 3)} : tile<4x3xi32>
        print [%t, %b2] {prefix = ""}
        """),
    "splat_through_expand_dims_broadcast_reshape_permute": (
        """
        %s = splat %x {shape = (4,)} : tile<4xi32>
        %e = expand_dims %s {axis = 0} : tile<1x4xi32>
        %b = broadcast %e {shape = (3, 4)} : tile<3x4xi32>
        %r = reshape %b {shape = (2, 6)} : tile<2x6xi32>
        %q = permute %r {order = (1, 0)} : tile<6x2xi32>
        print [%q] {prefix = ""}
        """, """
        %s = splat %x {shape = (4,)} : tile<4xi32>
        %e = splat %x {shape = (1, 4)} : tile<1x4xi32>
        %b = splat %x {shape = (3, 4)} : tile<3x4xi32>
        %r = splat %x {shape = (2, 6)} : tile<2x6xi32>
        %q = splat %x {shape = (6, 2)} : tile<6x2xi32>
        print [%q] {prefix = ""}
        """),
    "reshape_of_splat_to_scalar_is_the_scalar": (
        """
        %s = splat %f {shape = (1, 1)} : tile<1x1xf32>
        %r = reshape %s {shape = ()} : f32
        print [%r] {prefix = ""}
        """, """
        %s = splat %f {shape = (1, 1)} : tile<1x1xf32>
        print [%f] {prefix = ""}
        """),
    "splat_of_constant_is_constant_tile": (
        """
        %k = constant {value = -3, type = i32} : i32
        %s = splat %k {shape = (2, 3)} : tile<2x3xi32>
        print [%s] {prefix = ""}
        """, """
        %k = constant {value = -3, type = i32} : i32
        %s = constant {value = -3, type = tile<2x3xi32>} : tile<2x3xi32>
        print [%s] {prefix = ""}
        """),
    "reshape_same_shape_and_reshape_of_reshape": (
        """
        %a = reshape %t {shape = (4,)} : tile<4xi32>
        %b = reshape %t {shape = (2, 2), can_reorder = true} : tile<2x2xi32>
        %d = reshape %b {shape = (4, 1), can_reorder = true} : tile<4x1xi32>
        %e = reshape %t {shape = (2, 2)} : tile<2x2xi32>
        %g = reshape %e {shape = (1, 4), can_reorder = true} : tile<1x4xi32>
        %back = reshape %e {shape = (4,)} : tile<4xi32>
        print [%a, %d, %g, %back] {prefix = ""}
        """, """
        %b = reshape %t {shape = (2, 2), can_reorder = true} : tile<2x2xi32>
        %d = reshape %t {shape = (4, 1), can_reorder = true} : tile<4x1xi32>
        %e = reshape %t {shape = (2, 2)} : tile<2x2xi32>
        %g = reshape %t {shape = (1, 4)} : tile<1x4xi32>
        print [%t, %d, %g, %t] {prefix = ""}
        """),
    "permutes_compose_and_identity_vanishes": (
        """
        %e = expand_dims %t {axis = 0} : tile<1x4xi32>
        %f3 = expand_dims %e {axis = 0} : tile<1x1x4xi32>
        %a = permute %f3 {order = (2, 0, 1)} : tile<4x1x1xi32>
        %b = permute %a {order = (0, 2, 1)} : tile<4x1x1xi32>
        %back = permute %a {order = (1, 2, 0)} : tile<1x1x4xi32>
        %same = permute %t {order = (0,)} : tile<4xi32>
        print [%b, %back, %same] {prefix = ""}
        """, """
        %e = expand_dims %t {axis = 0} : tile<1x4xi32>
        %f3 = expand_dims %e {axis = 0} : tile<1x1x4xi32>
        %a = permute %f3 {order = (2, 0, 1)} : tile<4x1x1xi32>
        %b = permute %f3 {order = (2, 1, 0)} : tile<4x1x1xi32>
        print [%b, %f3, %t] {prefix = ""}
        """),
    "rules_apply_inside_regions": (
        """
        %z = constant {value = 0, type = i32} : i32
        %r = for %z, %x, %y, [%x] : i32 {
        ^(%i: i32, %acc: i32):
          %a = add %acc, %z : i32
          %b = add %a, %i : i32
          yield [%b]
        }
        print [%r] {prefix = ""}
        """, """
        %z = constant {value = 0, type = i32} : i32
        %r = for %z, %x, %y, [%x] : i32 {
        ^(%i: i32, %acc: i32):
          %b = add %acc, %i : i32
          yield [%b]
        }
        print [%r] {prefix = ""}
        """),
}


@pytest.mark.parametrize("name", CASES)
def test_canonicalize(name):
    body, expected = CASES[name]
    check_body(canonicalize, body, body if expected is None else expected)
