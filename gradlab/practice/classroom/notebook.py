"""`gradlab.check(fn, "lesson.exercise")`: a function written in a notebook cell (or a module), checked as `gradlab
check` checks a file. The function is pickled here by value (cloudpickle) and unpickled in the sandbox only."""

from __future__ import annotations

import hashlib
import inspect
import linecache
import sys
import sysconfig
import types
from pathlib import Path

from gradlab.errors import GradlabError, check
from gradlab.kit.result import Result
from gradlab.practice import all_exercises
from gradlab.practice.judging.check import run_check
from gradlab.practice.judging.submission import Submission
from gradlab.report.html import for_notebook  # the Result as Jupyter draws it


def check_function(fn, name: str) -> Result:
    """gradlab.check(FN, NAME): FN, defined in a notebook cell (or a module), checked as `gradlab check` checks a
    file: shipped by value into the sandbox with what it uses from other cells."""
    check(isinstance(name, str) and name in all_exercises(),
          f"unknown exercise {name!r}; gradlab.list_exercises() lists them")
    check(callable(fn), f"gradlab.check: {fn!r} is not a function")
    exercise = all_exercises()[name]
    data, lines, code_files = pickled(fn)
    shown = f"{getattr(fn, '__qualname__', None) or exercise.function} (a notebook cell)"
    return for_notebook(run_check(Submission(shown=shown, exercise=exercise, source=data, kind="pickle",
                                             lines=lines, code_files=code_files)))


def pickled(fn) -> tuple[bytes, dict[str, str], list]:
    """FN (a function, a lambda or an autograd.Function class) by value, with what it uses from other cells: cloudpickle
    pickles a notebook's functions and classes with the globals they use (helpers from other cells, by value too)
    and modules by name, as Ray, Dask and joblib ship functions. A function from a module the sandbox cannot import
    (a .py file beside the notebook) goes by value as well. Also, for its traceback, the text of the cells its code
    comes from and the cell of each code object (the child puts the file names back: cloudpickle 3.1.3 drops them).
    Unpickled in the sandbox only, never here."""
    import cloudpickle

    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    by_value = module is not None and module.__name__ != "__main__" and _own_module(module)
    if by_value:
        cloudpickle.register_pickle_by_value(module)
    try:
        data = cloudpickle.dumps(fn)
    except Exception as e:
        raise GradlabError(f"gradlab.check cannot send {getattr(fn, '__name__', fn)!r} to the sandbox: {e}") from None
    finally:
        if by_value:
            cloudpickle.unregister_pickle_by_value(module)
    lines, code_files = {}, []
    for code in _student_code(fn):
        name = code.co_filename
        code_files.append([*code_key(code), name])
        if name and name not in lines and not Path(name).is_file() and linecache.getlines(name):
            lines[name] = "".join(linecache.getlines(name))[:200_000]
    return data, lines, code_files


def code_key(code) -> list:
    """What identifies a code object on both sides of a pickle, whatever the pickler does to its file name (cloudpickle
    3.1.3 sets every co_filename to "<dynamic-code>"): its qualified name (its name on Python 3.10, which has no
    co_qualname), first line and a digest of its bytecode."""
    name = getattr(code, "co_qualname", code.co_name)
    return [name, code.co_firstlineno, hashlib.sha256(code.co_code).hexdigest()[:16]]


def _student_code(fn) -> list:
    """The code objects of FN (or of an autograd.Function class's methods), of the functions of its module it uses
    (helpers from other cells, and theirs), and the code nested in them (inner functions, lambdas, comprehensions)."""
    roots = [fn] if not isinstance(fn, type) else list(vars(fn).values())
    todo = [f for f in (getattr(r, "__func__", r) for r in roots) if inspect.isfunction(f)]
    codes, seen = [], set()
    while todo:
        f = todo.pop()
        stack = [f.__code__]
        while stack:
            code = stack.pop()
            if id(code) in seen:
                continue
            seen.add(id(code))
            codes.append(code)
            stack += [c for c in code.co_consts if isinstance(c, types.CodeType)]
            todo += [g for g in (f.__globals__.get(n) for n in code.co_names)
                     if inspect.isfunction(g) and g.__module__ == f.__module__ and id(g.__code__) not in seen]
    return codes


def _own_module(module) -> bool:
    """Whether MODULE is the student's (a file outside Python's installation and its site-packages)."""
    path = getattr(module, "__file__", None)
    if not path:
        return False
    path = str(Path(path).resolve())
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values()}
    return not any(path.startswith(str(Path(r).resolve()) + "/") for r in roots if r)
