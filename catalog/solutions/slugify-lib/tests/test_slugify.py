import unittest

from slugify import slugify


class SlugifyTest(unittest.TestCase):
    def test_lowercases(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_collapses_and_strips_separators(self):
        self.assertEqual(slugify("  --Hello,   World!--  "), "hello-world")

    def test_reduces_accents(self):
        self.assertEqual(slugify("Crème Brûlée"), "creme-brulee")

    def test_truncates_without_trailing_dash(self):
        self.assertEqual(slugify("abc def", max_length=4), "abc")
        self.assertEqual(len(slugify("x" * 100)), 60)


if __name__ == "__main__":
    unittest.main()
