"""Failure signatures: the line that names a failure, masked so that reruns compare equal."""

import pytest

from gitreduce.oracle.signature import extract_signature, signature_matches

GCC_ICE = """\
during GIMPLE pass: veclower2
/tmp/gitreduce-abc123/0/variant.c: In function 'f':
variant.c:12:5: warning: unused variable 'y' [-Wunused-variable]
variant.c:12:5: internal compiler error: in tree_vec_extract, at tree-vect-generic.cc:186
   12 |     v = v + w;
      |     ^
0x1a2b3c4 tree_vec_extract
\t../../gcc/tree-vect-generic.cc:186
Please submit a full bug report, with preprocessed source (by using -freport-bug).
"""

RUSTC_PANIC = """\
error[E0308]: mismatched types
 --> v.rs:3:5
thread 'rustc' panicked at compiler/rustc_type_ir/src/binder.rs:793:9:
expected type for `T/#0` (T/#0/0) but found Const
stack backtrace:
error: the compiler unexpectedly panicked. this is a bug.
"""

ASAN = """\
=================================================================
==12345==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010 at pc \
0x55d1c3a1b2c3 bp 0x7ffd4b0 sp 0x7ffd4a8
READ of size 4 at 0x602000000010 thread T0
SUMMARY: AddressSanitizer: heap-use-after-free /tmp/x/variant.c:5:3 in main
"""

PY_TRACEBACK = """\
Traceback (most recent call last):
  File "/tmp/gitreduce-q/0/check.py", line 3, in <module>
    raise error("error: not this")
  File "/usr/lib/python3.11/json/decoder.py", line 355, in raw_decode
    raise JSONDecodeError("Expecting value", s, err.value) from None
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)
"""


@pytest.mark.parametrize(
    ("output", "signature"),
    [
        (GCC_ICE, "internal compiler error: in tree_vec_extract, at tree-vect-generic.cc:186"),
        (RUSTC_PANIC, "thread 'rustc' panicked at compiler/rustc_type_ir/src/binder.rs:793:9:"),
        (
            "thread 'main' (4242) panicked at compiler/x.rs:1:2:\n",
            "thread 'main' panicked at compiler/x.rs:1:2:",
        ),
        (
            ASAN,
            "ERROR: AddressSanitizer: heap-use-after-free on address 0x<hex> at pc 0x<hex> "
            "bp 0x<hex> sp 0x<hex>",
        ),
        (
            PY_TRACEBACK,
            "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
        ),
        (
            "a.out: variant.c:7: main: Assertion `x > 0' failed.\nAborted (core dumped)\n",
            "a.out: variant.c:<line>: main: Assertion `x > 0' failed.",
        ),
        ("ok\nSegmentation fault (core dumped)\n", "Segmentation fault (core dumped)"),
        (
            "v.c:1:10: fatal error: nope.h: No such file\nv.c:2:1: error: x\n",
            "fatal error: nope.h: No such file",
        ),
        (
            "v.c:3:1: warning: w\nv.c:4:2:   error:   expected ';'   before '}'\nerror: later\n",
            "error: expected ';' before '}'",
        ),
        ("cc: error: /tmp/ccAbC12.o: no such file\n", "cc: error: <tmp>: no such file"),
        ("\x1b[01;31merror:\x1b[m colored\n", "error: colored"),
        ("all good\n1 error generated.\nwarning: -Werror\n", None),
        ("", None),
    ],
)
def test_extract_signature(output, signature):
    assert extract_signature(output, candidate="variant.c") == signature


def test_extract_signature_masks_candidate_lines_only():
    output = "thread 'main' panicked at src/main.rs:2:5:\n"
    assert extract_signature(output, candidate="src/main.rs") == (
        "thread 'main' panicked at src/main.rs:<line>:"
    )
    assert extract_signature(output) == output.strip()


def test_signature_matches():
    assert signature_matches("exit 1: x", "exit 1: x")
    assert not signature_matches("exit 1: x", "exit 2: x")
    assert not signature_matches("exit 1: x", None)
    assert signature_matches(None, "exit 1: anything")
