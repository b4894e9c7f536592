#!/usr/bin/env python3
"""Writes examples/session.json: a long, tool-heavy coding-agent session in OpenAI Chat format.

The session is invented for Compact's examples and tests: an agent fixes a rounding bug in a small
invoicing service, hits a failed approach, follows user constraints and keeps a plan. Deterministic:
running the script twice gives the same file.
"""
import json
import os
import random

rng = random.Random(20261121)
messages = []
call_no = 0


def say(role, text):
    messages.append({"role": role, "content": text})


def call(name, args, output):
    global call_no
    call_no += 1
    cid = f"call_{call_no:03d}"
    messages.append({
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": cid, "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)}}],
    })
    messages.append({"role": "tool", "tool_call_id": cid, "content": output})


def think(text):
    say("assistant", text)


def module_source(name, n_funcs, bug=False):
    lines = [f'"""{name}: part of the invoicing service."""', "from decimal import Decimal, ROUND_HALF_UP",
             "import logging", "", "log = logging.getLogger(__name__)", ""]
    for i in range(n_funcs):
        fname = f"{rng.choice(['compute', 'apply', 'load', 'render', 'validate'])}_{rng.choice(['line', 'tax', 'total', 'discount', 'currency'])}_{i}"
        lines += [f"def {fname}(invoice, rate=Decimal('0.{rng.randint(10, 99)}')):",
                  f'    """Handle step {i} of the {name} pipeline."""',
                  "    subtotal = sum(line.amount for line in invoice.lines)",
                  f"    log.debug('step {i}: subtotal=%s', subtotal)"]
        if bug and i == n_funcs // 2:
            lines += ["    # BUG: float arithmetic loses cents on large invoices",
                      "    total = float(subtotal) * (1 + float(rate))",
                      "    return round(total, 2)"]
        else:
            lines += ["    total = subtotal * (Decimal(1) + rate)",
                      "    return total.quantize(Decimal('0.01'), rounding=ROUND_HALF_UP)"]
        lines.append("")
    return "\n".join(f"{n + 1:>5}\t{l}" for n, l in enumerate(lines))


def pytest_output(failures, passed):
    out = ["============================= test session starts ==============================",
           "platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0",
           "rootdir: /work/invoicing", "collected %d items" % (passed + len(failures)), ""]
    for mod in ["tests/test_tax.py", "tests/test_totals.py", "tests/test_render.py", "tests/test_currency.py"]:
        out.append(mod + " " + "." * rng.randint(12, 30) + ("F" if failures else "") + "   [ %d%%]" % rng.randint(20, 100))
    out.append("")
    for f in failures:
        out += ["=================================== FAILURES ===================================",
                f"_____________________________ {f} _____________________________", "",
                "    def %s():" % f.split("::")[-1],
                "        invoice = make_invoice(lines=[Line(amount=Decimal('1234567.895'))] * 40)",
                ">       assert compute_total_7(invoice) == Decimal('51604938.01')",
                "E       AssertionError: assert 51604938.0 == Decimal('51604938.01')",
                "E        +  where 51604938.0 = compute_total_7(<Invoice 40 lines>)", "",
                "tests/test_totals.py:88: AssertionError"]
    out.append("=========================== short test summary info ============================")
    for f in failures:
        out.append(f"FAILED {f} - AssertionError: assert 51604938.0 == Decimal('51604938.01')")
    out.append(f"========================= {len(failures)} failed, {passed} passed in 3.42s =========================" if failures
               else f"============================== {passed} passed in 3.17s ==============================")
    return "\n".join(out)


def pip_log(fail):
    out = []
    for pkg in ["numpy", "pandas", "babel", "python-dateutil", "pytz", "six", "tzdata", "jinja2", "markupsafe"]:
        out.append(f"Collecting {pkg}")
        for pct in range(0, 101, 5):
            out.append(f"\r  Downloading {pkg}-1.{rng.randint(0, 9)}.{rng.randint(0, 9)}.tar.gz ({pct}%)")
        out.append(f"  Using cached {pkg}-wheel")
    if fail:
        out += ["ERROR: Cannot install money-utils==2.0.1 because these package versions have conflicting dependencies.",
                "The conflict is caused by:", "    invoicing 0.4.0 depends on babel<2.10",
                "    money-utils 2.0.1 depends on babel>=2.12",
                "ERROR: ResolutionImpossible: for help visit the pip documentation",
                "Exit code: 1"]
    return "\n".join(out)


def grep_output(term, n):
    files = ["invoicing/totals.py", "invoicing/tax.py", "invoicing/render.py", "invoicing/currency.py", "tests/test_totals.py"]
    return "\n".join(f"{rng.choice(files)}:{rng.randint(10, 400)}:    value = {term}(amount) * rate  # step {i}" for i in range(n))


say("system", "You are a careful coding agent working in /work/invoicing. Use the tools to read, run and edit code. "
              "Keep changes minimal and explain what you did.")
say("user", "The invoice totals are off by a cent on large invoices (customer ticket INV-2291). Find the cause and fix it. "
            "Constraints: do not change the public API of invoicing.totals, and we must stay on Python 3.11. "
            "Always run the full test suite before you say you are done.")
call("update_plan", {"plan": [{"step": "Reproduce INV-2291 with a failing test", "status": "in_progress"},
                              {"step": "Find the rounding bug", "status": "pending"},
                              {"step": "Fix without changing the public API", "status": "pending"},
                              {"step": "Run the full suite", "status": "pending"}]}, "Plan updated")
call("shell", {"command": ["ls", "-R", "invoicing", "tests"]},
     "invoicing:\n__init__.py\ncurrency.py\nrender.py\ntax.py\ntotals.py\n\ntests:\nconftest.py\ntest_currency.py\ntest_render.py\ntest_tax.py\ntest_totals.py\nExit code: 0")
call("read_file", {"path": "invoicing/totals.py"}, module_source("totals", 30, bug=True))
call("read_file", {"path": "invoicing/tax.py"}, module_source("tax", 28))
think("totals.py mixes float arithmetic into compute_total_7. Before changing it I'll reproduce the failure with the existing tests.")
call("shell", {"command": ["python", "-m", "pytest", "-q"]}, pytest_output(["tests/test_totals.py::test_large_invoice_total"], 117) + "\nExit code: 1")
call("grep", {"pattern": "float(", "path": "invoicing"}, grep_output("float", 60))
say("user", "Note: finance prefers ROUND_HALF_UP everywhere, never banker's rounding.")
think("Understood: ROUND_HALF_UP everywhere. First attempt: the money-utils package has a Money type with correct rounding; I'll try adding it.")
call("shell", {"command": ["pip", "install", "money-utils==2.0.1"]}, pip_log(fail=True))
think("That failed approach is a dead end: money-utils 2.0.1 needs babel>=2.12 but invoicing pins babel<2.10. "
      "I'll use decimal.Decimal directly instead of adding a dependency.")
call("update_plan", {"plan": [{"step": "Reproduce INV-2291 with a failing test", "status": "completed"},
                              {"step": "Find the rounding bug", "status": "completed"},
                              {"step": "Fix without changing the public API", "status": "in_progress"},
                              {"step": "Run the full suite", "status": "pending"}]}, "Plan updated")
call("read_file", {"path": "invoicing/render.py"}, module_source("render", 30))
call("read_file", {"path": "invoicing/currency.py"}, module_source("currency", 26))
call("apply_patch", {"input": "*** Begin Patch\n*** Update File: invoicing/totals.py\n@@ def compute_total_7\n-    total = float(subtotal) * (1 + float(rate))\n-    return round(total, 2)\n+    total = subtotal * (Decimal(1) + rate)\n+    return total.quantize(Decimal('0.01'), rounding=ROUND_HALF_UP)\n*** End Patch"},
     "Done! Updated invoicing/totals.py")
call("shell", {"command": ["python", "-m", "pytest", "-q", "tests/test_totals.py"]}, pytest_output([], 31) + "\nExit code: 0")
say("user", "Good. While you're there, the PDF renderer shows totals with a trailing space; fix that too, but keep the template files untouched.")
call("grep", {"pattern": "format_total", "path": "invoicing"}, grep_output("format_total", 40))
call("read_file", {"path": "invoicing/render.py", "offset": 120}, module_source("render", 12))
think("format_total pads with a space for alignment. I'll strip it in render.py only; templates stay untouched.")
call("apply_patch", {"input": "*** Begin Patch\n*** Update File: invoicing/render.py\n@@ def format_total\n-    return f\"{value:>12} \"\n+    return f\"{value:>12}\"\n*** End Patch"},
     "Done! Updated invoicing/render.py")
call("shell", {"command": ["python", "-m", "pytest", "-q", "tests/test_render.py"]},
     pytest_output(["tests/test_render.py::test_pdf_total_alignment"], 24) + "\nExit code: 1")
think("test_pdf_total_alignment expects the padded width; I'll update the expectation in the test, since the template is unchanged.")
call("apply_patch", {"input": "*** Begin Patch\n*** Update File: tests/test_render.py\n@@ def test_pdf_total_alignment\n-    assert line.endswith('51604938.01 ')\n+    assert line.endswith('51604938.01')\n*** End Patch"},
     "Done! Updated tests/test_render.py")
for _ in range(6):
    call("shell", {"command": ["python", "-m", "pytest", "-q"]}, pytest_output([], 118) + "\nExit code: 0")
    call("read_file", {"path": rng.choice(["invoicing/tax.py", "invoicing/currency.py"])}, module_source("tax", 20))
call("update_plan", {"plan": [{"step": "Reproduce INV-2291 with a failing test", "status": "completed"},
                              {"step": "Find the rounding bug", "status": "completed"},
                              {"step": "Fix without changing the public API", "status": "completed"},
                              {"step": "Run the full suite", "status": "completed"},
                              {"step": "Write the changelog entry", "status": "in_progress"}]}, "Plan updated")
say("user", "Please also add a changelog entry under 'Unreleased' mentioning INV-2291.")
call("read_file", {"path": "CHANGELOG.md"}, "# Changelog\n\n## Unreleased\n\n## 0.4.0\n- Multi-currency invoices\n" + "\n".join(f"- Fix {i}" for i in range(60)))
call("apply_patch", {"input": "*** Begin Patch\n*** Update File: CHANGELOG.md\n@@ ## Unreleased\n+- Fix cent rounding on large invoices (INV-2291)\n*** End Patch"},
     "Done! Updated CHANGELOG.md")
think("Changelog updated. Next: run the full suite one final time before reporting.")

request = {"model": "gpt-4o", "messages": messages, "tools": [
    {"type": "function", "function": {"name": n, "description": d, "parameters": {"type": "object", "properties": p}}}
    for n, d, p in [
        ("shell", "Run a command", {"command": {"type": "array", "items": {"type": "string"}}}),
        ("read_file", "Read a file", {"path": {"type": "string"}, "offset": {"type": "integer"}}),
        ("grep", "Search files", {"pattern": {"type": "string"}, "path": {"type": "string"}}),
        ("apply_patch", "Apply a patch", {"input": {"type": "string"}}),
        ("update_plan", "Update the plan", {"plan": {"type": "array"}}),
    ]]}
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "session.json")
with open(out, "w") as f:
    json.dump(request, f, indent=1)
    f.write("\n")
print(out, len(messages), "messages")
