"""relay.fromtext / tvm.parser.parse for the text form TVM prints a relay main in:

    #[version = "0.0.5"]
    def @main(%a: Tensor[(1, 2), uint8], %b: Tensor[(1, 2), float32]) {
      %0 = cast(%a, dtype="float32") /* ty=... */;
      add(%0, %b)
    }

One function, `main`: typed tensor parameters, `%n = expr;` bindings and a result; expressions are
calls of relay's ops by name (attributes as keywords), `+ - * /`, %names and number constants
(`1f`, `2i64`). Anything else (other functions, closures `fn`, `let`, ADTs, meta references) is
refused by name: build such a network in Python, or import it with relay.frontend."""
from __future__ import annotations

import re

import numpy as np

from ..errors import AotError

_TOKEN = re.compile(r"""\s*(?:
    (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<num>-?\d+(?:\.\d*)?(?:e-?\d+)?(?:f(?:16|32|64)?|i(?:8|16|32|64)|u(?:8|16|32|64))?)
  | (?P<local>%[A-Za-z0-9_.]+)
  | (?P<global>@[A-Za-z_][A-Za-z0-9_]*)
  | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<arrow>->)
  | (?P<punct>[()\[\]{},;=:+\-*/])
)""", re.X)
_BINARY = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide"}
_SUFFIX_DTYPE = {"f": "float32"}


def _tokens(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"^\s*#\[.*?\]\s*$", " ", text, flags=re.M)
    out, pos = [], 0
    while pos < len(text):
        if not text[pos:].strip():
            break
        m = _TOKEN.match(text, pos)
        if m is None:
            raise AotError(f"relay.fromtext: cannot read the text at {text[pos:pos + 30].strip()!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class _Relay:
    """relay's names as the text spells them (add, nn.conv2d, ...), from the modules that define them."""

    def __getattr__(self, name):
        from . import expr, nn, op
        if name == "nn":
            return nn
        for mod in (op, expr):
            if hasattr(mod, name):
                return getattr(mod, name)
        raise AotError(f"no relay op '{name}'")


class _Parser:
    def __init__(self, text):
        self.relay = _Relay()
        self.toks, self.k, self.env = _tokens(text), 0, {}

    def peek(self, value=None):
        if self.k >= len(self.toks):
            return None
        t = self.toks[self.k]
        return t if value is None or t[1] == value else None

    def take(self, value=None, kind=None):
        t = self.peek()
        if t is None or (value is not None and t[1] != value) or (kind is not None and t[0] != kind):
            want = value or kind
            raise AotError(f"relay.fromtext: expected {want!r}, found {t[1] if t else 'the end of the text'!r}")
        self.k += 1
        return t

    def module(self):
        self.take("def")
        name = self.take(kind="global")[1]
        if name != "@main":
            raise AotError(f"relay.fromtext: only a main function is read, not {name}")
        self.take("(")
        params = []
        while not self.peek(")"):
            var = self.take(kind="local")[1][1:]
            self.take(":")
            shape, dtype = self.tensor_type()
            v = self.relay.var(var, shape=shape, dtype=dtype)
            self.env[var] = v
            params.append(v)
            if not self.peek(")"):
                self.take(",")
        self.take(")")
        if self.peek("->"):
            self.take("->")
            self.tensor_type()
        self.take("{")
        while True:
            t = self.peek()
            if t and t[0] == "local" and self.k + 1 < len(self.toks) and self.toks[self.k + 1][1] == "=":
                self.k += 2
                self.env[t[1][1:]] = self.expr()
                self.take(";")
                continue
            body = self.expr()
            break
        self.take("}")
        if self.peek() is not None:
            raise AotError(f"relay.fromtext: only one function is read; text follows main: {self.peek()[1]!r}")
        return self.relay.IRModule.from_expr(self.relay.Function(params, body))

    def tensor_type(self):
        t = self.take(kind="name")[1]
        if t != "Tensor":
            raise AotError(f"relay.fromtext: parameter type {t} is not supported (Tensor[(shape), dtype])")
        self.take("[")
        self.take("(")
        shape = []
        while not self.peek(")"):
            shape.append(int(self.take(kind="num")[1]))
            if not self.peek(")"):
                self.take(",")
        self.take(")")
        self.take(",")
        dtype = self.take(kind="name")[1]
        self.take("]")
        return tuple(shape), dtype

    def expr(self):
        left = self.term()
        while self.peek() and self.peek()[1] in "+-":
            op = self.take()[1]
            left = getattr(self.relay, _BINARY[op])(left, self.term())
        return left

    def term(self):
        left = self.atom()
        while self.peek() and self.peek()[1] in "*/":
            op = self.take()[1]
            left = getattr(self.relay, _BINARY[op])(left, self.atom())
        return left

    def atom(self):
        kind, value = self.take()
        if kind == "local":
            if value[1:] not in self.env:
                raise AotError(f"relay.fromtext: {value} is used before it is defined")
            return self.env[value[1:]]
        if kind == "num":
            return self.relay.const(self.number(value))
        if value == "(":
            e = self.expr()
            self.take(")")
            return e
        if kind == "name":
            return self.call(value)
        raise AotError(f"relay.fromtext: {value!r} is not supported here (calls of relay ops, + - * /, %names, "
                       "numbers)")

    @staticmethod
    def number(text):
        m = re.match(r"^(-?[\d.e-]+)([fiu]\d*)?$", text)
        digits, suffix = m.group(1), m.group(2)
        if suffix is None:
            return np.array(float(digits) if any(c in digits for c in ".e") else int(digits),
                            "float32" if any(c in digits for c in ".e") else "int32")
        dtype = {"f": "float32", "i": "int32", "u": "uint32"}[suffix[0]] if len(suffix) == 1 else \
            {"f": "float", "i": "int", "u": "uint"}[suffix[0]] + suffix[1:]
        return np.array(float(digits) if dtype.startswith("float") else int(float(digits)), dtype)

    def value(self):
        kind, v = self.take()
        if kind == "str":
            return v[1:-1]
        if kind == "num":
            return self.number(v).item()
        if kind == "name" and v in ("True", "False"):
            return v == "True"
        if v == "[":
            out = []
            while not self.peek("]"):
                out.append(self.value())
                if not self.peek("]"):
                    self.take(",")
            self.take("]")
            return out
        raise AotError(f"relay.fromtext: attribute value {v!r} is not supported")

    def call(self, name):
        fn = self.relay
        try:
            for part in name.split("."):
                fn = getattr(fn, part)
        except AotError as e:
            raise AotError(f"relay.fromtext: op {name} is not one of aot's relay ops ({e})") from None
        self.take("(")
        args, kw = [], {}
        while not self.peek(")"):
            t = self.peek()
            if t[0] == "name" and self.k + 1 < len(self.toks) and self.toks[self.k + 1][1] == "=":
                self.k += 2
                kw[t[1]] = self.value()
            else:
                args.append(self.expr())
            if not self.peek(")"):
                self.take(",")
        self.take(")")
        try:
            return fn(*args, **kw)
        except TypeError as e:
            raise AotError(f"relay.fromtext: {name}: {e}") from None


def fromtext(source, source_name="from_string"):
    """TVM's relay.fromtext(text): the IRModule of the main function the text defines."""
    return _Parser(str(source)).module()
