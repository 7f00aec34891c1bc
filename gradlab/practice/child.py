"""The sandbox process: import the student's file, call their function through the exercise's harness on every case,
save the outputs (tensors only) for the gradlab process to judge. gradlab itself never imports this module.

    python -m gradlab.practice.child FILE HARNESS FUNCTION SEED OUT.pt

HARNESS is the exercise's harness module (gradlab.lessons.<lesson>.exercises.harness): the only code of the exercise
this process imports (no reference, no known mistake). It makes the inputs itself from the seed (the gradlab
process makes the same ones meanwhile, for the references), so the two processes start torch at the same time.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback


def student_trace(error: BaseException, path: str) -> tuple[str, str]:
    """(one line, the traceback cut to the frames of the student's own file)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if os.path.abspath(f.filename) == path]
    line = " ".join(f"{type(error).__name__}: {error}".split())[:300]
    if frames:
        line += f" (line {frames[-1].lineno}: {(frames[-1].line or '').strip()[:80]})"
    trace = "".join(traceback.format_list(frames)) + f"{type(error).__name__}: {error}"
    return line, trace


def main() -> None:
    path, harness_module, function, seed, out_path = sys.argv[1:6]
    path = os.path.abspath(path)
    import importlib

    import torch

    harness = importlib.import_module(harness_module).HARNESSES[function]
    cases = harness.cases(int(seed))

    def done(**result) -> None:
        torch.save(result, out_path)

    try:
        namespace = runpy.run_path(path, run_name="student")
    except SyntaxError as e:
        return done(ok=False, kind="syntax", error=f"syntax error at line {e.lineno}: {e.msg}", trace="")
    except BaseException as e:  # an import error, an exception at the top of the file, sys.exit
        line, trace = student_trace(e, path)
        return done(ok=False, kind="import", error=f"your file failed before {function}() was called: {line}",
                    trace=trace)
    fn = namespace.get(function)
    if not callable(fn):
        return done(ok=False, kind="missing", error=f"your file defines no function {function}()", trace="")
    outputs = []
    for case in cases:
        try:
            outputs.append(harness.call(fn, case))
        except NotImplementedError:
            return done(ok=False, kind="todo", error=f"{function} raises NotImplementedError: write its body",
                        trace="")
        except BaseException as e:
            line, trace = student_trace(e, path)
            return done(ok=False, kind="raised", error=f"{function}() raised on the input '{case['label']}': {line}",
                        trace=trace)
    done(ok=True, outputs=outputs)


if __name__ == "__main__":
    main()
