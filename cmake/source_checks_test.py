#!/usr/bin/env python3
"""Self-test of the source checks: each must fail on a deliberately wrong tree and pass on a right
one (run by CTest as source_checks_selftest)."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_coroutines  # noqa: E402


class CoroutineCheck(unittest.TestCase):
    FLAGGED = [
        'void f() { Ctx c{a, co_await this_coro::executor}; }',
        'void f() { return Ctx{co_await g()}; }',
        'void f() { auto x = Opts{.ex = co_await g(), .n = 1}; }',
        'void f() { h(Ctx{co_await g()}); }',
        'void f() { std::vector<int> v = {co_await g()}; }',
        'void f() { auto p = std::pair<int, int>{1, co_await g()}; }',
        'void f() { Outer o{{co_await g(), 2}, 3}; }',
        'void f() { Ctx c{a,\n  co_await g()}; }',
    ]
    CLEAN = [
        'void f() { auto ex = co_await this_coro::executor; Ctx c{a, ex}; }',
        'void f() { if (x) { co_await g(); } else { co_await h(); } }',
        'void f() { auto l = [&]() -> Awaitable<void> { co_await g(); }; }',
        'void f() { auto l = [&] { co_await g(); }; }',
        'Awaitable<void> S::F() const { co_await g(); }',
        'struct X { Awaitable<void> F() { co_await g(); } };',
        'namespace a { Awaitable<void> F() { co_await g(); } }',
        'void f() { Ctx c{a, b}; co_await g(); }',
        'void f() { h(co_await g()); }',
        'void f() { for (;;) { co_await g(); } }',
        'void f() { switch (x) { case 1: { co_await g(); } } }',
        'void f() { try { co_await g(); } catch (...) { } }',
        '// Ctx c{co_await g()};\nvoid f() {}',
        'const char* s = "Ctx c{co_await g()}";',
        'void f() { Ctx c{bar(co_await g())}; }',
    ]

    def test_flagged(self):
        for src in self.FLAGGED:
            self.assertTrue(check_coroutines.check_text(src), src)

    def test_clean(self):
        for src in self.CLEAN:
            self.assertEqual(check_coroutines.check_text(src), [], src)

    def test_line_numbers(self):
        self.assertEqual(check_coroutines.check_text('\n\nvoid f() { C c{co_await g()}; }'), [3])


class IncludeCheck(unittest.TestCase):
    """A tree with modules a (no deps), b (links a), b/test_tools (test-only, links b), and an
    app that links b only."""

    def make_tree(self, files):
        root = tempfile.mkdtemp(prefix='kvcs_include_check_')
        self.addCleanup(lambda: subprocess.run(['rm', '-rf', root], check=False))
        base = {
            'src/a/a.h': '#pragma once\n',
            'src/a/a.cc': '#include "a/a.h"\n',
            'src/b/b.h': '#pragma once\n#include "a/a.h"\n',
            'src/b/b.cc': '#include "b/b.h"\n#include "a/a.h"\n',
            'src/b/test_tools/fake.h': '#pragma once\n#include "b/b.h"\n',
            'src/b/test_tools/fake.cc': '#include "b/test_tools/fake.h"\n',
            'src/b/b_test.cc': '#include "b/b.h"\n#include "b/test_tools/fake.h"\n',
            'tests/app/app.cc': '#include "b/b.h"\n#include "app_util.h"\n',
            'tests/app/app_util.h': '#pragma once\n',
            'src/c/c.h': '#pragma once\n#include "a/a.h"\n',
            'src/c/c.cc': '#include "c/c.h"\n',
            'src/d/d.cc': '#include "c/c.h"\n',
            'tests/app_c/app_c.cc': '#include "c/c.h"\n#include "a/a.h"\n',
        }
        base.update(files)
        for rel, text in base.items():
            if text is None:
                continue
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as f:
                f.write(text)
        s = lambda *p: ';'.join(os.path.join(root, x) for x in p)  # noqa: E731
        manifest = os.path.join(root, 'targets.tsv')
        with open(manifest, 'w') as f:
            # lib_c links lib_a PUBLIC, lib_b links lib_a PRIVATE.
            f.write(f'lib_a\tSTATIC_LIBRARY\t\t{s("src/a/a.cc")}\t\n')
            f.write(f'lib_b\tSTATIC_LIBRARY\tlib_a\t{s("src/b/b.cc")}\t\n')
            f.write(f'lib_c\tSTATIC_LIBRARY\tlib_a\t{s("src/c/c.cc")}\tlib_a\n')
            f.write(f'lib_d\tSTATIC_LIBRARY\tlib_c\t{s("src/d/d.cc")}\tlib_c\n')
            f.write(f'lib_b_tt\tSTATIC_LIBRARY\tlib_b\t{s("src/b/test_tools/fake.cc")}\tlib_b\n')
            f.write(f'b_test\tEXECUTABLE\tlib_b;lib_b_tt\t{s("src/b/b_test.cc")}\t\n')
            f.write(f'app\tEXECUTABLE\tlib_b\t{s("tests/app/app.cc")}\t\n')
            f.write(f'app_c\tEXECUTABLE\tlib_c\t{s("tests/app_c/app_c.cc")}\t\n')
        return root, manifest

    def run_check(self, files):
        root, manifest = self.make_tree(files)
        r = subprocess.run([sys.executable, os.path.join(HERE, 'check_includes.py'), '--manifest',
                            manifest, '--root', root, '--scan', 'src', 'tests'],
                           capture_output=True, text=True)
        return r.returncode, r.stderr

    def test_right_tree_passes(self):
        rc, err = self.run_check({})
        self.assertEqual(rc, 0, err)

    def test_upward_include_in_source_fails(self):
        rc, err = self.run_check({'src/a/a.cc': '#include "a/a.h"\n#include "b/b.h"\n'})
        self.assertEqual(rc, 1)
        self.assertIn('src/a/a.cc:2: includes "b/b.h"', err)
        self.assertIn('does not link lib_b', err)

    def test_wrong_include_in_header_only_file_fails(self):
        rc, err = self.run_check({'src/a/a.h': '#pragma once\n#include "b/b.h"\n'})
        self.assertEqual(rc, 1)
        self.assertIn('src/a/a.h:2', err)

    def test_test_tools_from_production_fails(self):
        rc, err = self.run_check({'src/b/b.cc': '#include "b/test_tools/fake.h"\n'})
        self.assertEqual(rc, 1)
        self.assertIn('does not link lib_b_tt', err)

    def test_private_dependency_is_not_inherited(self):
        # app links lib_b, which links lib_a PRIVATE: a/ is not app's to include.
        rc, err = self.run_check({'tests/app/app.cc': '#include "a/a.h"\n'})
        self.assertEqual(rc, 1)
        self.assertIn('target app does not link lib_a', err)

    def test_library_must_declare_every_folder_it_includes(self):
        # lib_d links lib_c, which links lib_a PUBLIC; a library still names lib_a itself.
        rc, err = self.run_check({'src/d/d.cc': '#include "c/c.h"\n#include "a/a.h"\n'})
        self.assertEqual(rc, 1)
        self.assertIn('target lib_d does not link lib_a', err)

    def test_unresolved_include_fails(self):
        rc, err = self.run_check({'src/b/b.cc': '#include "b/missing.h"\n'})
        self.assertEqual(rc, 1)
        self.assertIn('does not resolve', err)

    def test_file_no_target_builds_fails(self):
        rc, err = self.run_check({'src/e/orphan.cc': '#include "a/a.h"\n'})
        self.assertEqual(rc, 1)
        self.assertIn('src/e/orphan.cc: no CMake target', err)

    def test_commented_include_is_ignored(self):
        rc, err = self.run_check({'src/a/a.cc': '#include "a/a.h"\n// #include "b/b.h"\n'})
        self.assertEqual(rc, 0, err)


if __name__ == '__main__':
    unittest.main()
