"""Scenario bookkeeping: every scenario is PASS, FAIL or NOT RUN (a scenario that could not run
is never counted as passed). Findings are the faults of the rendered fleet that the real API
server or Flux revealed, printed verbatim."""
import time, traceback


class Report:
    def __init__(self):
        self.results = []   # (name, status, detail)
        self.findings = []  # (scenario, text)
        self.figures = []   # (label, value)

    def finding(self, scenario, text):
        self.findings.append((scenario, text))
        print(f"  FINDING [{scenario}]: {text}", flush=True)

    def figure(self, label, value):
        self.figures.append((label, value))
        print(f"  figure: {label}: {value}", flush=True)

    def run(self, name, fn, *args):
        print(f"== scenario: {name}", flush=True)
        t0 = time.time()
        try:
            failures = fn(*args) or []
        except Exception as e:  # noqa: BLE001 - a crash fails the scenario with its message
            failures = [f"{type(e).__name__}: {e}"]
            traceback.print_exc()
        status = "FAIL" if failures else "PASS"
        for f in failures:
            print(f"  FAIL: {f}", flush=True)
        print(f"-- {status}: {name} ({time.time() - t0:.0f}s)", flush=True)
        self.results.append((name, status, failures))
        return not failures

    def not_run(self, name, why):
        print(f"== scenario: {name}\n-- NOT RUN: {why}", flush=True)
        self.results.append((name, "NOT RUN", [why]))

    def summary(self):
        print("\n== summary")
        for name, status, _ in self.results:
            print(f"  {status:8} {name}")
        if self.findings:
            print("== findings (faults of the rendered fleet seen by the API server / Flux)")
            for s, f in self.findings:
                print(f"  [{s}] {f}")
        passed = sum(1 for r in self.results if r[1] == "PASS")
        failed = len(self.results) - passed
        return passed, failed
