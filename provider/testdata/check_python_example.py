"""Checks a Python program's calls into a generated Pulumi SDK package.

usage: check_python_example.py SDK_PACKAGE_DIR ALIAS PROGRAM

Every call ALIAS.Name(...) in PROGRAM must name a class the package defines,
and every keyword argument must be a parameter of one of that class's
__init__ overloads: what Python would reject at run time with a TypeError,
found without the Pulumi SDK installed.
"""
import ast
import pathlib
import sys


def parameters(package: pathlib.Path) -> dict:
    """Maps each class of the package to the keyword names its __init__ takes."""
    found = {}
    for module in package.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text(), str(module))):
            if not isinstance(node, ast.ClassDef):
                continue
            names = found.setdefault(node.name, set())
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    args = item.args
                    names.update(a.arg for a in args.args + args.kwonlyargs)
    return found


def main() -> int:
    package, alias, program = pathlib.Path(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3])
    classes = parameters(package)
    problems = []
    for node in ast.walk(ast.parse(program.read_text(), str(program))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == alias):
            continue
        name = node.func.attr
        if name not in classes:
            problems.append(f"line {node.lineno}: {alias}.{name} is not in the SDK")
            continue
        for kw in node.keywords:
            if kw.arg is not None and kw.arg not in classes[name]:
                problems.append(f"line {node.lineno}: {alias}.{name} takes no argument {kw.arg}")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
