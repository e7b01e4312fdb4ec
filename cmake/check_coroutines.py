#!/usr/bin/env python3
"""Refuses `co_await` (or `co_yield`) directly inside a braced initializer.

GCC 12 miscompiles `T x{a, co_await f()}` and `return T{co_await f()}`: it bit-copies the awaited
temporary into the member and then destroys the temporary as well, so a shared state is released
twice (the connection-strand double free fixed in commit 84eec10). Await into a named local first:
    auto ex = co_await asio::this_coro::executor;
    ExtensionContext ctx{request, body, response, store, ex};

The check tokenizes each file (comments, strings and character literals removed), tracks every
bracket, and decides for each `{` whether it opens a braced initializer (after a type or variable
name, `=`, `return`, `(`, `,` or `{` inside an initializer, a template type) or a block (after
`)`, `else`, `do`, `try`, a lambda introducer, a trailing return type, a class/namespace head).

usage: check_coroutines.py --root DIR --scan DIR [DIR ...]   (or: check_coroutines.py FILE...)
Exit status: 0 clean, 1 violations (listed on stderr), 2 usage errors.
"""
import argparse
import os
import re
import sys

TOKEN_RE = re.compile(r'''
    (?P<raw>R"(?P<delim>[^()\\\s]{0,16})\(.*?\)(?P=delim)")
  | (?P<str>"(?:\\.|[^"\\\n])*")
  | (?P<chr>'(?:\\.|[^'\\\n])+')
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<pp>^[ \t]*\#(?:\\\n|[^\n])*)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>\.?[0-9](?:[0-9A-Za-z_.']|[eEpP][+-])*)
  | (?P<punct>->|::|[{}()\[\];,:=<>?.])
  | (?P<other>\S)
''', re.S | re.M | re.X)

BLOCK_KEYWORDS = {'else', 'do', 'try', 'const', 'override', 'noexcept', 'mutable', 'final',
                  'volatile', 'constexpr', 'consteval'}
HEAD_KEYWORDS = {'struct', 'class', 'union', 'enum', 'namespace', 'extern'}
NOT_NAMES = {'return', 'co_return', 'co_await', 'co_yield', 'throw', 'case', 'default', 'new',
             'delete', 'sizeof', 'typename', 'template', 'operator'} | BLOCK_KEYWORDS | HEAD_KEYWORDS


def tokens(text):
    out = []
    line, pos = 1, 0
    for m in TOKEN_RE.finditer(text):
        kind = m.lastgroup if m.lastgroup != 'delim' else 'raw'
        line += text.count('\n', pos, m.start())
        pos = m.start()
        if kind in ('comment', 'pp'):
            continue
        if kind in ('raw', 'str', 'chr', 'num'):
            out.append(('lit', 'lit', line))
        else:
            out.append((kind, m.group(0), line))
    return out


def statement_start(toks, i):
    # Index just after the last ; { } before position i.
    j = i - 1
    while j >= 0 and toks[j][1] not in (';', '{', '}'):
        j -= 1
    return j + 1


def brace_is_init(toks, i, stack):
    """Whether toks[i] (a '{') opens a braced initializer."""
    if i == 0:
        return False
    kind, prev, _ = toks[i - 1]
    enclosing = stack[-1] if stack else None
    if prev in (')', ']', ';', '}', ':') or prev in BLOCK_KEYWORDS:
        return False
    if prev in ('{', ','):
        return enclosing is not None and (enclosing[0] == '(' or enclosing[1])
    if prev in ('(', '=', 'return', 'co_return', '?'):
        return True
    head = [t[1] for t in toks[statement_start(toks, i):i]]
    if any(h in HEAD_KEYWORDS for h in head):
        return False  # struct X {, class X : public Y {, namespace x {, enum class E {
    # A trailing return type: `[...](...) -> T {` or `auto f() -> T {`.
    last_paren = max((k for k, h in enumerate(head) if h == ')'), default=-1)
    if '->' in head[last_paren + 1:]:
        return False
    if prev == '>' or (kind == 'ident' and prev not in NOT_NAMES):
        return True
    return False


def check_text(text):
    toks = tokens(text)
    stack = []  # (bracket, is_init)
    found = []
    for i, (kind, tok, line) in enumerate(toks):
        if tok == '{':
            stack.append(('{', brace_is_init(toks, i, stack)))
        elif tok in ('(', '['):
            stack.append((tok, False))
        elif tok in ('}', ')', ']'):
            if stack:
                stack.pop()
        elif kind == 'ident' and tok in ('co_await', 'co_yield'):
            if stack and stack[-1] == ('{', True):
                found.append(line)
    return found


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--root')
    ap.add_argument('--scan', nargs='+', default=[])
    ap.add_argument('files', nargs='*')
    a = ap.parse_args(argv)
    files = list(a.files)
    for d in a.scan:
        for dirpath, dirnames, filenames in os.walk(os.path.join(a.root or '.', d)):
            dirnames.sort()
            files += [os.path.join(dirpath, f) for f in sorted(filenames)
                      if f.endswith(('.cc', '.h', '.cpp', '.hpp'))]
    if not files:
        print('check_coroutines: no files to check', file=sys.stderr)
        return 2
    bad = 0
    for path in files:
        with open(path, encoding='utf-8', errors='replace') as f:
            for line in check_text(f.read()):
                rel = os.path.relpath(path, a.root) if a.root else path
                print(f'{rel}:{line}: co_await inside a braced initializer (GCC 12 destroys the '
                      'awaited temporary twice); co_await into a named local first', file=sys.stderr)
                bad += 1
    if bad:
        return 1
    print(f'coroutine check: {len(files)} files, no co_await inside a braced initializer')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
