"""tvm.register_func / get_global_func, and the lazily provided functions (a system library's
search, as tvm.contrib.cblas's, runs at the name's first lookup, not at import)."""
from aot.runtime import packed


def test_a_lazy_function_is_provided_once_at_its_first_lookup_or_is_absent():
    calls = []

    def found():
        calls.append("found")
        return lambda: 42

    def missing():
        calls.append("missing")
        return None
    packed.register_lazy("test.lazy.found", found)
    packed.register_lazy("test.lazy.missing", missing)
    try:
        assert calls == []
        assert packed.get_global_func("test.lazy.found")() == 42
        assert packed.get_global_func("test.lazy.found")() == 42
        assert packed.get_global_func("test.lazy.missing", allow_missing=True) is None
        assert "test.lazy.found" in packed._REGISTRY and "test.lazy.missing" not in packed._REGISTRY
        assert calls == ["found", "missing"]
        packed.register_lazy("test.lazy.found", found)
        packed.register_func("test.lazy.found", lambda: 7, override=True)      # a registration replaces it
        assert packed.get_global_func("test.lazy.found")() == 7 and calls == ["found", "missing"]
    finally:
        packed._REGISTRY.pop("test.lazy.found", None)
        packed._LAZY.pop("test.lazy.missing", None)


def test_importing_contrib_searches_for_no_library():
    import aot.contrib.cblas  # noqa: F401
    assert "tvm.contrib.cblas.matmul" in packed._LAZY or "tvm.contrib.cblas.matmul" in packed._REGISTRY
