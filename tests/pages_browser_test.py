#!/usr/bin/python3
"""The job pages in a real browser: headless Chromium (Debian's) loads the
coordinator's live pages and the HTML report of a tiny HpT job trained
through its switch on real processes (coordinator, 2 gpu, reram and systolic
workers over loopback gRPC), and checks that

- no page logs a console error, throws, or fails a load, and the report
  file asks for nothing but itself (it opens offline);
- the plotted series hold the job's data: one point per step, one test-loss
  mark per epoch, every phase-controller check, the switch at the job's
  switch step, time and energy bars whose segments sum to the report's
  totals and GPU-only bars equal to each baseline's figure, a Gantt chart
  whose tasks end at the step's makespan, one chip tile per tile in use,
  and predictions with one point per test sample shown;
- a running job's page updates itself.

Screenshots go to $TEST_UNDECLARED_OUTPUTS_DIR (bazel-testlogs/tests/
pages_browser_test/test.outputs/).

Runs with: <hpt_coordinator> <hpt_worker> <hptctl>
"""
import json
import os
import re
import sys
import time
import unittest

import cdp_browser
import hpt_cluster

COORDINATOR, WORKER, HPTCTL = [os.path.abspath(a) for a in sys.argv[1:4]]
del sys.argv[1:4]
OUT = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR", "/tmp")

# What a page shows, read back from its DOM.
READ_PAGE = """(() => {
  const q = (s) => document.querySelector(s);
  const all = (s) => Array.from(document.querySelectorAll(s));
  const num = (e, a) => e ? Number(e.getAttribute(a)) : null;
  const bars = (id) => all('#' + id + ' g.bar').map(g => ({
      bar: g.dataset.bar, total: Number(g.dataset.total),
      segments: Array.from(g.querySelectorAll('rect.segment')).map(r => Number(r.dataset.value))}));
  const loss = q('#loss-plot');
  return {
    state: q('#content') && q('#content').dataset.state,
    step: q('#content') && Number(q('#content').dataset.step),
    points: num(loss, 'data-points'), steps: num(loss, 'data-steps'),
    train_points: all('#loss-plot polyline[data-series=train-loss]').map(p => [
        Number(p.dataset.count), p.getAttribute('points').trim().split(/\\s+/).length]),
    test_marks: all('#loss-plot [data-series=test-loss] circle').length,
    checks: all('#loss-plot g.check').map(g => Number(g.dataset.step)),
    switch_step: all('#loss-plot g.switch').map(g => Number(g.dataset.step)),
    time: bars('time-bars'), energy: bars('energy-bars'),
    gantt_tasks: num(q('#gantt'), 'data-tasks'), gantt_makespan: num(q('#gantt'), 'data-makespan'),
    gantt_finish: all('#gantt rect.task').map(r => Number(r.dataset.finish)),
    tiles: all('#chip-tiles rect.tile').length, tiles_said: num(q('#chip-tiles'), 'data-tiles'),
    predictions: all('svg[data-plot=prediction]').map(s =>
        Array.from(s.querySelectorAll('polyline')).map(p => Number(p.dataset.count))),
    report_text: q('#report pre') ? q('#report pre').textContent.length : 0,
    measured_rows: all('#measured-baselines tbody tr').length,
  };
})()"""


def rel(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


class PagesInBrowserTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.cluster = hpt_cluster.Cluster(COORDINATOR, WORKER, HPTCTL, prefix="pages-",
                                          coordinator_flags=["--http=127.0.0.1:0"])
        cls.base = f"http://127.0.0.1:{cls.cluster.ports['http']}"
        cls.job_id = cls.cluster.train(hpt_cluster.TINY_JOB, name="pages")
        cls.job = json.loads(cls.cluster.ctl("report", cls.job_id, "--format=json").stdout)
        cls.browser = cdp_browser.Browser()

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        cls.cluster.stop()

    def check_job_page(self, page):
        job = self.job
        hpt = job["hpt"]
        steps = int(job["progress"]["step"])
        epochs = int(job["progress"]["epochs"])
        self.assertEqual(page["state"], "SUCCEEDED")
        # One point per step (150 steps: no downsampling), the polyline
        # holding as many coordinates as it says.
        self.assertEqual(page["steps"], steps)
        self.assertEqual(page["points"], steps)
        self.assertEqual(page["train_points"], [[steps, steps]])
        self.assertEqual(page["test_marks"], epochs)
        checks = [int(e["iteration"]) for e in hpt["events"] if e.get("kind", "CHECK") == "CHECK"]
        self.assertEqual(page["checks"], checks)
        self.assertGreater(int(hpt["switch_step"]), 0)
        self.assertEqual(page["switch_step"], [int(hpt["switch_step"])])
        comparison = hpt["comparison"]
        for key, bars, total_key, baseline_key in (
                ("time", page["time"], "hpt_time_s", "gpu_only_time_s"),
                ("energy", page["energy"], "hpt_energy_j", "gpu_only_energy_j")):
            by_id = {b["bar"]: b for b in bars}
            phases = by_id["hpt-phases"]
            self.assertLess(rel(sum(phases["segments"]), comparison[total_key]), 1e-9, key)
            self.assertLess(rel(phases["total"], comparison[total_key]), 1e-9, key)
            self.assertEqual(len(phases["segments"]), len(hpt["phases"]))
            for baseline in comparison["baselines"]:
                bar_id = "gpu-only-" + baseline["baseline"]
                if baseline.get("measured"):
                    bar_id += "-measured"
                    if baseline_key not in baseline:  # not measured (a CPU's energy): no bar
                        self.assertNotIn(bar_id, by_id)
                        continue
                bar = by_id[bar_id]
                self.assertLess(rel(bar["total"], baseline[baseline_key]), 1e-9, baseline)
            if key == "energy":  # device energy includes the interconnect: the same total
                devices = by_id["hpt-devices"]
                self.assertLess(rel(sum(devices["segments"]), comparison[total_key]), 1e-9)
        # Five modelled; the job's own steps measured (libtorch).
        self.assertEqual(len(comparison["baselines"]), 6)
        self.assertEqual(page["measured_rows"], 1)
        self.assertGreater(page["gantt_tasks"], 0)
        self.assertEqual(len(page["gantt_finish"]), page["gantt_tasks"])
        self.assertLess(rel(max(page["gantt_finish"]), page["gantt_makespan"]), 1e-6)
        tiles = sum(int(r["tiles"]) for r in hpt["reram_layers"])
        self.assertGreater(tiles, 0)
        self.assertEqual(page["tiles"], tiles)
        self.assertEqual(page["tiles_said"], tiles)
        self.assertEqual(len(page["predictions"]), 4)
        for series in page["predictions"]:
            self.assertEqual(len(series), 2)
            self.assertGreater(series[0], 10)
            self.assertEqual(series[0], series[1])
        self.assertGreater(page["report_text"], 500)

    def open_clean(self, url):
        self.browser.events.clear()
        self.browser.errors.clear()
        self.browser.open(url)
        self.assertEqual(self.browser.errors, [], url)

    def test_1_html_report_opens_offline_and_holds_the_job(self):
        path = os.path.join(self.cluster.dir, "report.html")
        run = self.cluster.ctl("report", self.job_id, "--format=html", f"--out={path}")
        self.assertIn(f"wrote {path}", run.stdout)
        with open(path) as f:
            html = f.read()
        self.assertIsNone(re.search(r"""(src|href)=["']?(https?:)?//""", html))
        url = "file://" + path
        self.open_clean(url)
        self.assertEqual(self.browser.requests(), [url])  # nothing from the network
        self.check_job_page(self.browser.eval(READ_PAGE))
        self.browser.screenshot(os.path.join(OUT, "report.png"))
        nowhere = self.cluster.ctl("report", self.job_id, "--format=html", "--out=/proc/nope/r.html",
                                   check=False)
        self.assertEqual(nowhere.returncode, 3, nowhere.stderr)
        self.assertEqual(nowhere.stderr,
                         "hptctl: FAILED_PRECONDITION: cannot write '/proc/nope/r.html': "
                         "folder '/proc/nope': No such file or directory\n")

    def test_2_live_pages_list_and_show_the_job(self):
        self.open_clean(self.base + "/")
        links = self.browser.eval("Array.from(document.querySelectorAll('#jobs a')).map(a => a.textContent)")
        self.assertIn(self.job_id, links)
        self.browser.screenshot(os.path.join(OUT, "live-jobs.png"))
        self.open_clean(f"{self.base}/jobs/{self.job_id}")
        self.check_job_page(self.browser.eval(READ_PAGE))
        self.browser.screenshot(os.path.join(OUT, "live-job.png"))
        # A job that is not there: a page that says so, with status 404.
        self.browser.errors.clear()
        self.browser.open(f"{self.base}/jobs/job-999999")
        self.assertIn("No job 'job-999999' here.", self.browser.eval("document.body.textContent"))
        self.assertEqual(len(self.browser.errors), 1)
        self.assertIn("status of 404", self.browser.errors[0])

    def test_3_a_running_jobs_page_updates_itself(self):
        self.cluster.ctl("submit", "--name=long", *hpt_cluster.TINY_JOB, "--epochs=60")
        jobs = json.loads(self.cluster.ctl("list", "--format=json").stdout)["jobs"]
        running = jobs[0]["job_id"]
        try:
            deadline = time.time() + 60
            # A queued job's JSON has no progress yet (empty messages are
            # left out).
            while int(self.cluster.job(running).get("progress", {}).get("step", 0)) < 2:
                self.assertLess(time.time(), deadline, "the long job did not start")
                time.sleep(0.2)
            self.open_clean(f"{self.base}/jobs/{running}")
            first = self.browser.eval(READ_PAGE)["step"]
            deadline = time.time() + 30
            later = first
            while later <= first and time.time() < deadline:
                # Let the page's own timer fetch and swap its content.
                self.browser.call("Runtime.evaluate", {"expression": "1", "awaitPromise": True,
                                                       "timeout": 1000}, session=True)
                time.sleep(0.5)
                later = self.browser.eval(READ_PAGE)["step"]
            self.assertGreater(later, first)
            self.assertEqual(self.browser.errors, [])
        finally:
            self.cluster.ctl("cancel", running, check=False)


if __name__ == "__main__":
    unittest.main(verbosity=2)
