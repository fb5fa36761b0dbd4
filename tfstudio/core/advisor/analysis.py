"""What the static rules share: a parsed script, its TensorFlow names, traced functions, datasets.

Pure ``ast``: nothing here imports TensorFlow. Every helper answers "don't know"
(``None`` / empty) when the script does something it cannot follow.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

KERAS_METHODS = frozenset({"call", "train_step", "test_step", "predict_step"})
DATASET_FN_METHODS = frozenset({"map", "filter", "flat_map", "interleave"})
DATASET_METHODS = frozenset(
    {
        "map", "filter", "flat_map", "interleave", "batch", "padded_batch", "unbatch",
        "shuffle", "take", "skip", "repeat", "prefetch", "cache", "apply", "enumerate",
        "concatenate", "rebatch", "with_options", "ignore_errors", "zip", "window",
        "shard", "take_while", "prefetch_to_device", "batch_with_ragged", "ragged_batch",
    }
)  # fmt: skip
NUMERIC = (int, float)
PY_FUNCS = ("py_function", "numpy_function", "py_func")
FIT_METHODS = frozenset({"fit", "evaluate", "predict", "train_on_batch", "test_on_batch"})
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, *COMPREHENSIONS)


def dotted(node: ast.AST) -> str | None:
    """``tf.data.Dataset.range`` for an attribute chain of names, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    """The value of keyword ``name`` in ``call``, or None."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def is_const(node: ast.AST | None, value: object) -> bool:
    """True when ``node`` is the literal ``value``."""
    return isinstance(node, ast.Constant) and node.value is value


def int_literal(node: ast.AST | None) -> int | None:
    """The value of an integer literal (``1000``, ``10_000``, ``2 ** 10``), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp):
        a, b = int_literal(node.left), int_literal(node.right)
        if a is None or b is None:
            return None
        if isinstance(node.op, ast.Mult):
            return a * b
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Pow) and 0 <= b < 64:
            return a**b
    return None


@dataclass
class Traced:
    """A function TensorFlow traces: its node, why, and whether AutoGraph converts it.

    ``kind`` is ``"tf.function"``, ``"keras"`` (``call``/``train_step``... of a Keras
    subclass: traced by ``fit`` without AutoGraph) or ``"dataset"`` (a ``Dataset.map``
    function: always traced, even when functions run eagerly).
    """

    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    kind: str
    autograph: bool
    cls: ast.ClassDef | None = None
    why: str = ""  # what traces it, for a Keras method: "model.fit() at line 30 compiles..."

    @property
    def name(self) -> str:
        """The function's name (``<lambda>`` for a lambda)."""
        if isinstance(self.node, ast.Lambda):
            return "<lambda>"
        if self.cls is not None:
            return f"{self.cls.name}.{self.node.name}"
        return self.node.name

    def body_nodes(self) -> Iterator[ast.AST]:
        """Every node of the body, not entering nested defs or classes (lambdas are entered)."""
        roots = [self.node.body] if isinstance(self.node, ast.Lambda) else list(self.node.body)
        stack: list[ast.AST] = list(reversed(roots))
        while stack:
            node = stack.pop()
            yield node
            if isinstance(node, ast.Call) and (dotted(node.func) or "").endswith(PY_FUNCS):
                continue  # the Python function given to tf.py_function runs eagerly
            for child in reversed(list(ast.iter_child_nodes(node))):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue
                stack.append(child)

    def params(self) -> set[str]:
        """Names of the function's parameters."""
        a = self.node.args
        names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        names += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
        return set(names)

    def locals(self) -> set[str]:
        """Names assigned in the body (parameters included)."""
        out = self.params()
        for node in self.body_nodes():
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.add(node.id)
        return out


@dataclass
class Script:
    """A parsed script and what the rules need to know about it."""

    path: str
    source: str
    tree: ast.Module
    modules: dict[str, str] = field(default_factory=dict)  # local name -> module
    assigns: dict[str, list[ast.expr]] = field(default_factory=dict)  # name -> values
    defs: dict[str, ast.FunctionDef] = field(default_factory=dict)  # module-level defs
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    traced: list[Traced] = field(default_factory=list)
    eager: bool = False  # run_eagerly=True / run_functions_eagerly(True) seen
    nodes: list[ast.AST] = field(default_factory=list)  # every node, walked once
    methods_on: dict[str, set[str]] = field(default_factory=dict)  # name -> methods called on it
    _dataset: dict[int, bool] = field(default_factory=dict)
    _scope: dict[int, ast.AST] = field(default_factory=dict)  # id(node) -> its scope
    _parent: dict[int, ast.AST] = field(default_factory=dict)  # id(scope) -> enclosing scope
    # (id(scope), name) -> (end line, value) for each binding; value None: not followable
    _binds: dict[tuple[int, str], list[tuple[int, ast.expr | None]]] = field(default_factory=dict)
    _defs_in: dict[tuple[int, str], list[ast.FunctionDef | ast.AsyncFunctionDef]] = field(
        default_factory=dict
    )

    @classmethod
    def parse(cls, source: str, path: str = "<script>") -> Script:
        """Parse ``source`` (raises ``SyntaxError`` as ``ast.parse`` does)."""
        s = cls(path=path, source=source, tree=ast.parse(source, filename=path))
        s._index()
        return s

    # -- names -------------------------------------------------------------------
    def _index(self) -> None:
        self.nodes = list(ast.walk(self.tree))
        for node in self.nodes:
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
            ):
                self.methods_on.setdefault(node.func.value.id, set()).add(node.func.attr)
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.modules[a.asname or a.name.split(".")[0]] = (
                        a.name if a.asname else a.name.split(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    self.modules[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.assigns.setdefault(t.id, []).append(node.value)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(
                node.target, ast.Name
            ):
                self.assigns.setdefault(node.target.id, []).append(node.value or node.target)
            elif isinstance(node, ast.Call):
                if is_const(keyword(node, "run_eagerly"), True):
                    self.eager = True
                name = self.qualname(node.func) or ""
                if name.endswith("run_functions_eagerly") and node.args:
                    self.eager = self.eager or is_const(node.args[0], True)
        self._index_scopes(self.tree, self.tree)
        for node in self.tree.body:
            if isinstance(node, ast.FunctionDef):
                self.defs[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
        self._find_traced()

    def qualname(self, node: ast.AST) -> str | None:
        """The dotted name with the first part resolved through imports (``tf.x`` ->
        ``tensorflow.x``), or None."""
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        module = self.modules.get(head)
        if module is None:
            return name
        return f"{module}.{rest}" if rest else module

    def is_tf(self, node: ast.AST) -> bool:
        """True for a name under ``tensorflow`` or ``keras`` (``tf.reduce_sum``, ``ops.mean``)."""
        name = self.qualname(node) or ""
        return name.startswith(("tensorflow.", "keras."))

    def single_value(self, name: str) -> ast.expr | None:
        """The value of ``name`` when the script assigns it exactly once."""
        values = self.assigns.get(name, [])
        return values[0] if len(values) == 1 else None

    def value_at(self, name: ast.Name) -> ast.expr | None:
        """The value ``name`` holds where it is used: the last plain assignment above it.

        Looked up in the scope of the use (a function's locals, then the scopes around
        it, as Python does). None when the name is also bound some other way there
        (``+=``, a loop, a parameter, unpacking, an import) or not assigned above the use.
        """
        scope: ast.AST | None = self._scope.get(id(name), self.tree)
        while scope is not None:
            binds = self._binds.get((id(scope), name.id))
            if binds:
                if any(value is None for _, value in binds):
                    return None
                before = [(end, v) for end, v in binds if end < name.lineno]
                if not before:
                    return None
                return max(before, key=lambda ev: ev[0])[1]
            scope = self._parent.get(id(scope))
            while isinstance(scope, ast.ClassDef):  # a class body is no closure of its methods
                scope = self._parent.get(id(scope))
        return None

    def is_bound(self, name: ast.Name) -> bool:
        """True when the script binds ``name`` where it is used (False: a built-in)."""
        scope: ast.AST | None = self._scope.get(id(name), self.tree)
        own = True
        while scope is not None:
            if (own or not isinstance(scope, ast.ClassDef)) and self._binds.get(
                (id(scope), name.id)
            ):
                return True
            scope, own = self._parent.get(id(scope)), False
        return False

    def def_of(self, name: ast.Name) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The function ``name`` calls where it is used, when its scope binds it only by one def."""
        scope: ast.AST | None = self._scope.get(id(name), self.tree)
        while scope is not None:
            binds = self._binds.get((id(scope), name.id))
            if binds:
                defs = self._defs_in.get((id(scope), name.id), [])
                return defs[0] if len(binds) == 1 and len(defs) == 1 else None
            scope = self._parent.get(id(scope))
            while isinstance(scope, ast.ClassDef):
                scope = self._parent.get(id(scope))
        return None

    def returns(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
        """The values ``fn`` returns (``return x``), not counting nested functions."""
        out: list[ast.expr] = []
        stack: list[ast.AST] = list(fn.body)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Return) and node.value is not None:
                out.append(node.value)
            elif isinstance(node, (*SCOPES,)):
                continue
            stack.extend(ast.iter_child_nodes(node))
        return out

    def _index_scopes(self, node: ast.AST, scope: ast.AST) -> None:
        """Record each node's scope and every name binding, per scope (iterative walk)."""
        stack: list[tuple[ast.AST, ast.AST]] = [(node, scope)]
        while stack:
            node, scope = stack.pop()
            self._scope[id(node)] = scope
            inner = scope
            if isinstance(node, SCOPES) and node is not scope:
                self._parent[id(node)] = scope
                inner = node
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self._bind(scope, node.name, None)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self._defs_in.setdefault((id(scope), node.name), []).append(node)
                if not isinstance(node, ast.ClassDef) and not isinstance(node, COMPREHENSIONS):
                    a = node.args
                    for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg):
                        if p is not None:
                            self._bind(node, p.arg, None)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    # decorators, defaults and bases are evaluated in the enclosing scope
                    outer = [*node.decorator_list]
                    if isinstance(node, ast.ClassDef):
                        outer += [*node.bases, *node.keywords]
                    else:
                        outer += [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
                    for child in outer:
                        stack.append((child, scope))
                    stack.extend((child, inner) for child in node.body)
                    continue
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self._bind(inner, t.id, node.value, node.end_lineno or 0)
                    else:
                        self._bind_all(inner, t)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.value is not None:
                    self._bind(inner, node.target.id, node.value, node.end_lineno or 0)
            elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor)):
                self._bind_all(inner, node.target)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                self._bind_all(inner, node.optional_vars)
            elif isinstance(node, ast.NamedExpr):
                self._bind_all(inner, node.target)
            elif isinstance(node, ast.comprehension):
                self._bind_all(inner, node.target)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self._bind(inner, node.name, None)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    self._bind(inner, (a.asname or a.name).split(".")[0], None)
            elif isinstance(node, (ast.Global, ast.Nonlocal, ast.Delete)):
                names = node.names if not isinstance(node, ast.Delete) else []
                for n in names:
                    self._bind(inner, n, None)
                if isinstance(node, ast.Delete):
                    for t in node.targets:
                        self._bind_all(inner, t)
            stack.extend((child, inner) for child in ast.iter_child_nodes(node))

    def _bind(self, scope: ast.AST, name: str, value: ast.expr | None, end: int = 0) -> None:
        self._binds.setdefault((id(scope), name), []).append((end, value))

    def _bind_all(self, scope: ast.AST, target: ast.AST) -> None:
        """Every name stored in ``target`` (unpacking, a loop variable): not followable."""
        for n in ast.walk(target):
            if isinstance(n, ast.Name):
                self._bind(scope, n.id, None)

    def line(self, lineno: int) -> str:
        """Source line ``lineno`` (1-based), stripped."""
        lines = self.source.splitlines()
        return lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""

    # -- traced functions ---------------------------------------------------------
    def _find_traced(self) -> None:
        seen: set[int] = set()

        def add(t: Traced) -> None:
            if id(t.node) not in seen:
                seen.add(id(t.node))
                self.traced.append(t)

        for node in self.nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in node.decorator_list:
                    call = dec if isinstance(dec, ast.Call) else None
                    target = dec.func if call else dec
                    if self.qualname(target) == "tensorflow.function":
                        autograph = not (call and is_const(keyword(call, "autograph"), False))
                        add(Traced(node, "tf.function", autograph))
            elif isinstance(node, ast.Call):
                if self.qualname(node.func) == "tensorflow.function" and node.args:
                    fn = self.function_of(node.args[0])
                    if fn is not None:
                        autograph = not is_const(keyword(node, "autograph"), False)
                        add(Traced(fn, "tf.function", autograph))
                elif (
                    isinstance(node.func, ast.Attribute)
                    and node.func.attr in DATASET_FN_METHODS
                    and self.is_dataset(node.func.value)
                ):
                    arg = node.args[0] if node.args else keyword(node, "map_func")
                    fn = self.function_of(arg) if arg is not None else None
                    if fn is not None:
                        add(Traced(fn, "dataset", autograph=True))
        # Keras methods (call, train_step...) are traced only where the script traces them:
        # a model that is fitted (and every layer it is made of), or a model or layer
        # called in a tf.function. A layer only ever called eagerly is left alone.
        traced_classes = self._traced_classes([t for t in self.traced if t.kind != "keras"])
        for name, why in traced_classes.items():
            cls = self.classes[name]
            for item in cls.body:
                if isinstance(item, ast.FunctionDef) and item.name in KERAS_METHODS:
                    add(Traced(item, "keras", autograph=False, cls=cls, why=why))

    def _traced_classes(self, functions: list[Traced]) -> dict[str, str]:
        """The script's Keras classes whose methods TensorFlow traces -> what traces them.

        Roots: the model of each ``fit``/``evaluate``/``predict`` call (followed through
        assignments, ``Sequential([...])``, functional graphs, functions of the script
        that build it, a parameter's arguments) and what each traced function calls.
        Then every Keras class of the script those classes make or derive from. A model
        that cannot be followed traces nothing here ("don't know": no alarm).
        """
        keras_classes = {n for n, c in self.classes.items() if self.is_keras_class(c)}
        if not keras_classes:
            return {}
        found: dict[str, str] = {}
        roots: list[tuple[int, list[ast.AST], str]] = []
        for node in self.nodes:
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in FIT_METHODS
            ):
                receiver = node.func.value
                name = dotted(receiver) or "the model"
                why = f"{name}.{node.func.attr}() at line {node.lineno} compiles it into a graph"
                roots.append((node.lineno, [receiver], why))
        for fn in functions:
            if fn.kind == "tf.function":
                why = f"it runs inside the tf.function {fn.name}"
            else:
                why = f"it runs inside a Dataset function ({fn.name}), always a graph"
            used = [n for n in fn.body_nodes() if isinstance(n, ast.Name | ast.Call)]
            roots.append((getattr(fn.node, "lineno", 0), used, why))
        for _, exprs, why in sorted(roots, key=lambda r: r[0]):
            for expr in exprs:
                for name in self._classes_in(expr, keras_classes):
                    found.setdefault(name, why)
        # what a traced class makes (its sublayers) and inherits is traced with it
        todo = list(found)
        while todo:
            name = todo.pop()
            cls = self.classes[name]
            made = {
                n.func.id
                for n in ast.walk(cls)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            }
            bases = {dotted(b) or "" for b in cls.bases}
            for other in sorted((made | bases) & keras_classes):
                if other not in found:
                    found[other] = found[name]
                    todo.append(other)
        return found

    def _classes_in(self, expr: ast.AST, classes: set[str]) -> set[str]:
        """The script's classes (of ``classes``) whose instances ``expr`` may hold or use."""
        out: set[str] = set()
        seen: set[int] = set()
        stack: list[ast.AST] = [expr]
        while stack and len(seen) < 5000:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
                    if sub.func.id in classes:
                        out.add(sub.func.id)
                        continue
                    fn = self.def_of(sub.func)
                    if fn is not None:  # a function of the script that builds the model
                        stack.extend(fn.body)
                elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                    if sub.id in classes:
                        continue
                    stack.extend(self._values_of(sub))
        return out

    def _values_of(self, name: ast.Name) -> list[ast.AST]:
        """What ``name`` may hold where it is used: its value there, else every value
        the script assigns to that name, and for a parameter the arguments given to it."""
        value = self.value_at(name)
        if value is not None:
            return [value]
        values: list[ast.AST] = list(self.assigns.get(name.id, []))
        scope = self._scope.get(id(name))
        while scope is not None and not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            scope = self._parent.get(id(scope))
        if scope is not None:
            a = scope.args
            params = [p.arg for p in (*a.posonlyargs, *a.args)]
            if name.id in params:
                at = params.index(name.id)
                for call in self.nodes:
                    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
                        continue
                    if call.func.id != scope.name or self.def_of(call.func) is not scope:
                        continue
                    arg = keyword(call, name.id)
                    if arg is None and at < len(call.args):
                        arg = call.args[at]
                    if arg is not None:
                        values.append(arg)
        return values

    def uses_fit(self) -> bool:
        """True when the script calls ``fit``/``evaluate``/``predict``, which trace ``call``.

        Without them a subclass may be run eagerly (a custom loop): its ``call`` is not
        known to be traced, so the rules leave it alone.
        """
        return any(methods & FIT_METHODS for methods in self.methods_on.values())

    def function_of(self, node: ast.AST) -> ast.FunctionDef | ast.Lambda | None:
        """The function a ``map``/``tf.function`` argument names: a lambda or a def in scope."""
        if isinstance(node, ast.Lambda):
            return node
        if isinstance(node, ast.Name):
            fn = self.def_of(node)
            return fn if isinstance(fn, ast.FunctionDef) else None
        return None

    def is_keras_class(self, cls: ast.ClassDef) -> bool:
        """True for a class deriving from a Keras ``Model``/``Layer`` (as far as can be seen)."""
        for base in cls.bases:
            name = self.qualname(base) or ""
            if name.startswith(("tensorflow.keras.", "keras.", "tf_keras.")):
                return True
            if (
                name in self.classes
                and name != cls.name
                and self.is_keras_class(self.classes[name])
            ):
                return True
        return False

    def is_keras_model_class(self, cls: ast.ClassDef) -> bool:
        """True for a subclass of ``keras.Model`` (directly or through a class in the script)."""
        for base in cls.bases:
            name = self.qualname(base) or ""
            if name.startswith(("tensorflow.keras.", "keras.", "tf_keras.")) and name.endswith(
                "Model"
            ):
                return True
            if name in self.classes and name != cls.name:
                if self.is_keras_model_class(self.classes[name]):
                    return True
        return False

    # -- datasets -----------------------------------------------------------------
    def is_dataset(self, node: ast.AST, depth: int = 0) -> bool:
        """True when ``node`` is visibly a ``tf.data.Dataset``."""
        if depth > 50:
            return False
        key = id(node)
        if key in self._dataset:
            return self._dataset[key]
        self._dataset[key] = False  # cycles: assume not
        result = False
        if isinstance(node, ast.Call):
            name = self.qualname(node.func) or ""
            if name.startswith("tensorflow.data."):
                result = True
            elif isinstance(node.func, ast.Attribute) and node.func.attr in DATASET_METHODS:
                result = self.is_dataset(node.func.value, depth + 1)
            elif isinstance(node.func, ast.Name):  # a function of the script returning one
                fn = self.def_of(node.func)
                values = self.returns(fn) if fn is not None else []
                result = bool(values) and all(self.is_dataset(v, depth + 1) for v in values)
        elif isinstance(node, ast.Name):
            value = self.value_at(node)
            result = value is not None and self.is_dataset(value, depth + 1)
        self._dataset[key] = result
        return result

    def chain(self, node: ast.AST, depth: int = 0) -> list[ast.Call]:
        """The dataset calls that made ``node``, source first (through assignments and
        functions of the script that return a dataset).

        The first call is the source (``from_tensor_slices``, ``range``, ``zip``...);
        the chain is empty when the source cannot be followed.
        """
        calls: list[ast.Call] = []
        while depth < 100:
            depth += 1
            if isinstance(node, ast.Name):
                value = self.value_at(node)
                if value is None:
                    return []
                node = value
                continue
            if not isinstance(node, ast.Call):
                return []
            name = self.qualname(node.func) or ""
            if name.startswith("tensorflow.data."):
                calls.append(node)
                return list(reversed(calls))
            if isinstance(node.func, ast.Attribute) and node.func.attr in DATASET_METHODS:
                calls.append(node)
                node = node.func.value
                continue
            fn = self.def_of(node.func) if isinstance(node.func, ast.Name) else None
            values = self.returns(fn) if fn is not None else []
            if len(values) == 1:  # a function of the script that builds the dataset
                node = values[0]
                continue
            return []
        return []


def method(call: ast.Call) -> str:
    """The method name of ``x.name(...)`` ("" for other calls)."""
    return call.func.attr if isinstance(call.func, ast.Attribute) else ""
