"""The store's structure declares itself: each mixin of `SessionDB` depends only on `_Core`.

A mixin may use what `_Core` defines (at run time, in `__init__`, or as a declared sibling
method under `if TYPE_CHECKING`) and what it and its own bases define (search's layers, one
chain in `state/search/`); it never overrides a core method
or calls `super()` (hooks are explicit lists), and search's caches exist from `__init__` on.
No module of the store imports one that imports it back, even for type checking.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from pathlib import Path

import pytest

from hermes_tui.state import core
from hermes_tui.state.core import BoundedCache, _Core
from hermes_tui.state.db import SessionDB

MIXINS = [c for c in SessionDB.__mro__ if c not in (SessionDB, _Core, object)]


def _class_node(cls: type) -> ast.ClassDef:
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    node = tree.body[0]
    assert isinstance(node, ast.ClassDef)
    return node


def _declared_stubs() -> dict[str, ast.FunctionDef]:
    """The sibling methods `_Core` declares for the type checker (`if TYPE_CHECKING:` in its body)."""
    out: dict[str, ast.FunctionDef] = {}
    for stmt in _class_node(_Core).body:
        if isinstance(stmt, ast.If) and ast.unparse(stmt.test) == "TYPE_CHECKING":
            out |= {f.name: f for f in stmt.body if isinstance(f, ast.FunctionDef)}
    return out


def _init_attributes(cls: type) -> set[str]:
    """Names `cls.__init__` assigns on `self`."""
    names: set[str] = set()
    for node in ast.walk(_class_node(cls)):
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            for sub in ast.walk(node):
                targets = (
                    sub.targets
                    if isinstance(sub, ast.Assign)
                    else [sub.target]
                    if isinstance(sub, ast.AnnAssign)
                    else []
                )
                for t in targets:
                    if (
                        isinstance(t, ast.Attribute)
                        and isinstance(t.value, ast.Name)
                        and t.value.id == "self"
                    ):
                        names.add(t.attr)
    return names


def _core_names() -> set[str]:
    return set(dir(_Core)) | _init_attributes(_Core) | set(_declared_stubs())


def test_mixins_found() -> None:
    assert len(MIXINS) >= 12
    assert all(issubclass(m, _Core) for m in MIXINS), "every mixin builds on the core"


@pytest.mark.parametrize("mixin", MIXINS, ids=lambda m: m.__name__)
def test_mixin_uses_only_itself_and_the_core(mixin: type) -> None:
    """Every `self.x` a mixin reads or calls is its own or the core's (declared), never a sibling's."""
    # A mixin may also use what its own bases define (search's layers: each builds on those below).
    own = set().union(*(vars(c) for c in mixin.__mro__ if issubclass(c, _Core) and c is not _Core))
    allowed = own | _core_names()
    node = _class_node(mixin)
    for sub in ast.walk(node):  # attributes the mixin assigns on self are its own state
        if isinstance(sub, ast.Assign):
            own |= {
                t.attr
                for t in sub.targets
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
            }
    allowed |= own
    used = {
        sub.attr
        for sub in ast.walk(node)
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self"
    }
    assert sorted(used - allowed) == []


@pytest.mark.parametrize("mixin", MIXINS, ids=lambda m: m.__name__)
def test_mixin_never_overrides_the_core(mixin: type) -> None:
    """Hooks are registered (`_install_hooks`), so renaming a core method cannot silently drop one."""
    overrides = sorted(name for name in vars(mixin) if name in vars(_Core) and not name.startswith("__"))
    assert overrides == []
    calls_super = [
        sub.lineno
        for sub in ast.walk(_class_node(mixin))
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "super"
    ]
    assert calls_super == []


def test_declared_siblings_are_implemented_once_with_their_signature() -> None:
    stubs = _declared_stubs()
    assert {"get_session", "export_session", "get_compression_tip"} <= set(stubs)
    for name, stub in stubs.items():
        owners = [m for m in MIXINS if name in vars(m)]
        assert len(owners) == 1, (name, owners)
        real = inspect.signature(getattr(SessionDB, name))
        stub_params = [a.arg for a in stub.args.posonlyargs + stub.args.args + stub.args.kwonlyargs]
        assert stub_params == list(real.parameters), name
        assert name not in vars(_Core), f"{name}: declared only for the type checker"


def test_hooks_are_installed_by_the_composed_store(tmp_path: Path) -> None:
    db = SessionDB(tmp_path / "state.db")
    try:
        assert db._write_guards == [db._side_write_guard]
        assert db._open_hooks == [db._resume_conversion, db._side_check]
        assert db._close_hooks == [db._side_stop]
        assert db._upkeep_pre_steps == [db._finish_conversion]
    finally:
        db.close()

    class Bare(_Core):
        pass

    with pytest.raises(NotImplementedError):
        Bare(tmp_path / "bare.db")


def test_search_caches_are_declared_in_init(tmp_path: Path) -> None:
    """Searching (prefix, newest-first, glued-word retries, filters) adds no attribute to the store."""
    db = SessionDB(tmp_path / "state.db")
    try:
        before = set(vars(db))
        db.create_session("s1", "cli")
        db.append_message("s1", "user", "deploy the config.yaml 修改youer服务端 today")
        db.append_message("s1", "assistant", "deployment done")
        for query, sort in (("deploy*", "newest"), ("deploy", None), ("zeppelin", None), ("服务端", None)):
            db.search(query, sort=sort, source_filter=["cli"])
            db.search_count(query)
        assert set(vars(db)) == before
        assert db._top_id_cache is not None  # the small-store plan used the declared cache
    finally:
        db.close()


def test_bounded_cache_drops_least_recently_used() -> None:
    cache: BoundedCache[str, int] = BoundedCache(3)
    for i, key in enumerate("abc"):
        cache.put(key, i)
    assert cache.get("a") == 0  # now most recently used
    cache.put("d", 3)
    assert len(cache) == 3
    assert cache.get("b") is None  # the least recently used went, not everything
    assert (cache.get("a"), cache.get("c"), cache.get("d")) == (0, 2, 3)


def test_core_imports_schema_init_at_module_level() -> None:
    """schema_init imports the core only for type checking, so the core imports it plainly."""
    assert core.initialize.__module__ == "hermes_tui.state.schema_init"


def test_sort_orders_and_routes_are_named_values() -> None:
    from hermes_tui.state import search as S

    assert S.SortOrder.parse(" Newest ") is S.SortOrder.NEWEST
    assert S.SortOrder.parse("OLDEST") is S.SortOrder.OLDEST
    assert [S.SortOrder.parse(v) for v in (None, "", "rank", "relevance", 3)] == [S.SortOrder.RANK] * 5  # type: ignore[arg-type]
    assert S.SortOrder.RANK.fts_sql == "ORDER BY rank"
    # The public route strings are unchanged.
    names = {r.name for r in (S.FTS5, S.FTS_CJK, S.TRIGRAM, S.CJK_SIDE, S.LIKE_SCAN, S.INTERRUPTED, S.EMPTY)}
    assert names == {"fts5", "fts_cjk", "trigram", "cjk_side", "like_scan", "interrupted", "empty"}
    assert S.SearchOutcome().route == "empty"
    assert {r for r in (S.FTS5, S.FTS_CJK, S.TRIGRAM) if r.windowed_rank} == {S.FTS_CJK, S.TRIGRAM}


def test_search_routing_compares_no_sql_text() -> None:
    """Control flow goes by `SortOrder`/`Route`, never by an SQL fragment's text."""
    import pkgutil

    from hermes_tui.state import search as S

    modules = [S] + [
        importlib.import_module(f"{S.__name__}.{m.name}") for m in pkgutil.iter_modules(S.__path__)
    ]
    assert len(modules) > 5  # the package's modules, each read
    tree = ast.Module(
        body=[n for m in modules for n in ast.parse(inspect.getsource(m)).body], type_ignores=[]
    )
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            texts = [
                c
                for c in (node.left, *node.comparators)
                if isinstance(c, ast.Constant)
                and isinstance(c.value, str)
                and (c.value.startswith("ORDER BY") or c.value.startswith("messages_fts"))
            ]
            if texts:
                bad.append(ast.unparse(node))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "startswith"
            and any(isinstance(a, ast.Constant) and str(a.value).startswith("ORDER BY") for a in node.args)
        ):
            bad.append(ast.unparse(node))
    assert bad == []


def _state_imports() -> dict[str, set[str]]:
    """Each module of `hermes_tui.state` and the modules of it that it imports: at the top, in
    a function or under `TYPE_CHECKING` alike (a circle through any of them is still a circle)."""
    root = Path(core.__file__).parent
    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_pkg else parts)
        package = name if is_pkg else name.rsplit(".", 1)[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = package
            for _ in range(node.level - 1):
                base = base.rsplit(".", 1)[0]
            target = (f"{base}.{node.module}" if node.module else base) if node.level else node.module or ""
            for alias in node.names:  # `from . import x`: x may be a module of the package
                sub = f"{target}.{alias.name}"
                deps.add(sub if (root.parent.parent / (sub.replace(".", "/") + ".py")).exists() else target)
        graph[name] = {d for d in deps if d.startswith("hermes_tui.state") and d != name}
    return graph


def test_the_store_has_no_import_circle() -> None:
    graph = _state_imports()
    assert {"hermes_tui.state.core", "hermes_tui.state.schema_init", "hermes_tui.state.search.routes"} <= set(
        graph
    )
    circles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if dep == "hermes_tui.state":  # the package's face imports everything; nothing imports it back
                continue
            if state.get(dep) == 1:
                circles.append(path[path.index(dep) :] + [dep])
            elif dep not in state:
                visit(dep, [*path, dep])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert circles == []
