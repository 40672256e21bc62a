// crcr's web UI plugin: the relay's home page, in place of Buildbot's "Welcome to buildbot", the bisection
// pages (#/bisections, #/bisections/<id>), the health pages (#/health, #/health/<backend>,
// #/health/<backend>/test?id=<node id>) and the units' week (#/units). Hand-written against the globals
// Buildbot's UI gives its plugins (React, ReactRouterDOM, BuildbotPluginSupport), so it needs no JavaScript build
// step. What it shows comes from the master's REST API and the plugin's own JSON (plugins/crcr/api/), which both ask
// the relay's Authz.
(function (global) {
  "use strict";
  var React = global.React;
  var Router = global.ReactRouterDOM;
  var h = React.createElement;
  var RESULTS = ["success", "warnings", "failure", "skipped", "exception", "retry", "cancelled"];

  function fetchJson(url) {
    return fetch(url, { credentials: "same-origin" }).then(function (r) {
      if (r.ok) return r.json();
      // The plugin's API says what is wrong in {"error": ...}; Buildbot's answers text.
      return r.json().then(
        function (body) { throw new Error(body.error || url + ": HTTP " + r.status); },
        function () { throw new Error(url + ": HTTP " + r.status); });
    });
  }

  function getJson(path) {
    return fetchJson("api/v2/" + path);
  }

  // The plugin's JSON at `url`, fetched again when the URL changes: {data, error} (both null while loading).
  function useJson(url) {
    var state = React.useState({ url: null, data: null, error: null });
    React.useEffect(function () {
      var alive = true;
      fetchJson(url).then(
        function (data) { if (alive) state[1]({ url: url, data: data, error: null }); },
        function (e) { if (alive) state[1]({ url: url, data: null, error: String(e.message || e) }); });
      return function () { alive = false; };
    }, [url]);
    return state[0].url === url ? state[0] : { data: null, error: null };
  }

  // The relay's upstream, backends and left-out files (plugins/crcr/api/relay, see www/relay.py): {data, error},
  // both null while loading. Fetched once per page load, for every commit link to share; signing in or out loads
  // the page anew.
  var relayFetched = null, relayKnown = { data: null, error: null };
  function useRelay() {
    var state = React.useState(relayKnown);
    React.useEffect(function () {
      var alive = true;
      relayFetched = relayFetched || fetchJson("plugins/crcr/api/relay").then(
        function (data) { relayKnown = { data: data, error: null }; },
        function (e) { relayKnown = { data: null, error: String(e.message || e) }; });
      relayFetched.then(function () { if (alive) state[1](relayKnown); });
      return function () { alive = false; };
    }, []);
    return state[0];
  }

  function useLatestBuilds() {
    var state = React.useState({ builders: {}, latest: {}, loaded: false, error: null });
    React.useEffect(function () {
      var alive = true;
      getJson("builders")
        .then(function (data) {
          var byName = {};
          // Buildbot's virtual builders are a fanned-out backend's child builds: the backends' rows are their parents'.
          var builders = data.builders.filter(function (b) { return b.tags.indexOf("_virtual_") < 0; });
          builders.forEach(function (b) { byName[b.name] = b; });
          return Promise.all(builders.map(function (b) {
            return getJson("builders/" + b.builderid + "/builds?order=-number&limit=1").then(function (d) {
              return [b.name, d.builds[0] || null];
            });
          })).then(function (pairs) {
            var latest = {};
            pairs.forEach(function (p) { latest[p[0]] = p[1]; });
            if (alive) state[1]({ builders: byName, latest: latest, loaded: true, error: null });
          });
        })
        .catch(function (e) { if (alive) state[1]({ builders: {}, latest: {}, loaded: true, error: String(e) }); });
      return function () { alive = false; };
    }, []);
    return state[0];
  }

  function verdict(build) {
    if (!build) return "no build yet";
    if (!build.complete) return "building: " + (build.state_string || "");
    var result = RESULTS[build.results] || "unknown", text = build.state_string || "";
    // Buildbot's own text often starts with the result already ("warnings ops: ...").
    return text.indexOf(result) === 0 ? text : result + ": " + text;
  }

  function LeftOut(props) {
    if (!props.problems.length) return null;
    return h("div", { className: "alert alert-danger", "data-crcr": "left-out" },
      h("strong", null, "Left out of this relay: files that do not validate"),
      h("p", null, "The master started without them; the other backends and hosts run. Fix the files, check them " +
        "with crcr check, then run crcr master reconfig."),
      h("pre", null, props.problems.join("\n")));
  }

  // The backends whose device has no unit connected (the JSON of plugins/crcr/api/disconnected, see
  // www/disconnected.py): their requests wait, and after the backend's stale_after their commits get an error.
  function Disconnected() {
    var answer = useJson("plugins/crcr/api/disconnected");
    var rows = (answer.data && answer.data.backends) || [];
    if (answer.error) return h("div", { className: "alert alert-warning" }, answer.error);
    if (!rows.length) return null;
    return h("div", { className: "alert alert-warning", "data-crcr": "disconnected" },
      h("strong", null, "No unit connected"),
      h("p", null, "These backends' builds wait until a unit of their device connects; a commit waiting longer " +
        "than the backend's stale_after gets an error status on GitHub meanwhile, and its real verdict later."),
      h("ul", { className: "mb-0" }, rows.map(function (row) {
        return h("li", { key: row.backend, "data-backend": row.backend },
          h("strong", null, row.backend), ": no " + row.device + " unit connected " +
          (row.never_connected ? "since the master started, " + when(row.since)
            : "since " + when(row.since)));
      })));
  }

  function BackendRow(props) {
    var b = props.backend, builder = props.builder, build = props.build;
    var name = builder ? h("a", { href: "#/builders/" + builder.builderid }, b.name) : b.name;
    var latest = build && builder
      ? h("a", { href: "#/builders/" + builder.builderid + "/builds/" + build.number }, verdict(build))
      : verdict(build);
    return h("tr", null,
      h("td", null, name),
      h("td", null, b.level),
      h("td", null, b.device),
      h("td", null, builder ? latest : props.loaded ? "inactive: no host offers its device" : "…"),
      h("td", null, b.description),
      h("td", null, h("a", { href: "#/bisections?backend=" + encodeURIComponent(b.name) }, "bisections")));
  }

  function RelayHome() {
    var answer = useRelay();
    var relay = answer.data || { backends: [], left_out: [] };
    var data = useLatestBuilds();
    var upstream = relay.upstream || {};
    // The views without the rows of child builds: one row per backend, its children a click away in its builds.
    var parents = relay.child_tag ? "?tags=-" + relay.child_tag : "";
    return h("div", { className: "container bb-home-view", "data-crcr": "home" },
      h("h2", null, (global.buildbotFrontendConfig || {}).title || "crcr relay"),
      h("p", null, "Relays upstream ", h("code", null, upstream.name || ""), " (branches: ",
        (upstream.branches || []).join(", "), ") to ", relay.backends.length, " backends. See the ",
        h("a", { href: "#/waterfall" + parents }, "waterfall"), ", the ", h("a", { href: "#/console" + parents }, "console"),
        ", the ", h("a", { href: "#/builders" + parents }, "builders"), ", the ", h("a", { href: "#/workers" }, "workers"),
        ", the ", h("a", { href: "#/units" }, "units"), "' hardware failures, the ",
        h("a", { href: "#/bisections" }, "bisections"), " and the backends' ",
        h("a", { href: "#/health" }, "health"), "."),
      answer.error ? h("div", { className: "alert alert-warning" }, answer.error) : null,
      h(LeftOut, { problems: relay.left_out || [] }),
      h(Disconnected),
      h(HomeHealth),
      h("h4", null, "Backends and their latest builds"),
      data.error ? h("div", { className: "alert alert-warning" }, data.error) : null,
      h("table", { className: "table table-hover table-striped" },
        h("thead", null, h("tr", null,
          h("th", null, "backend"), h("th", null, "level"), h("th", null, "device"),
          h("th", null, "latest build"), h("th", null, "description"), h("th", null, ""))),
        h("tbody", null, relay.backends.map(function (b) {
          return h(BackendRow, {
            key: b.name, backend: b, builder: data.builders[b.name], build: data.latest[b.name], loaded: data.loaded,
          });
        }))));
  }

  // --- bisections (the JSON of plugins/crcr/api/bisections, see www/bisections.py) ---

  var SHORT_SHA = 10;  // as the bisection's GitHub statuses name commits
  // Buildbot's result colours for a step's outcome and a bisection's state.
  var OUTCOME_CLASSES = {
    good: "SUCCESS", bad: "FAILURE", mixed: "WARNINGS", skipped: "SKIPPED", interrupted: "RETRY", pending: "PENDING",
    running: "PENDING", done: "SUCCESS", abandoned: "CANCELLED",
  };

  function Badge(props) {
    return h("span", { className: "bb-badge-status results_" + (OUTCOME_CLASSES[props.value] || "UNKNOWN") },
      props.value);
  }

  // An upstream commit linked to its web page: `href` if given (the health JSON's commit_url), else the upstream's
  // commit_url + sha; its sha alone where the upstream has no web view (both null: config/upstream_web.py).
  function CommitLink(props) {
    var relay = useRelay().data;
    if (!props.sha) return h("span", { className: "text-muted" }, "—");
    var base = relay && relay.upstream.commit_url;
    var href = props.href || (base ? base + props.sha : null);
    var text = h("code", null, props.sha.slice(0, SHORT_SHA));
    return href ? h("a", { href: href, title: props.sha }, text) : text;
  }

  function Range(props) {
    return h("span", null, h(CommitLink, { sha: props.good }), "..", h(CommitLink, { sha: props.bad }));
  }

  function when(seconds) {
    return seconds ? new Date(seconds * 1000).toISOString().slice(0, 16).replace("T", " ") + " UTC" : "";
  }

  function joined(items, render) {
    var out = [];
    items.forEach(function (item, i) { if (i) out.push(" "); out.push(h(React.Fragment, { key: i }, render(item))); });
    return out;
  }

  function TestList(props) {
    if (!props.tests.length) return props.none ? h("span", { className: "text-muted" }, props.none) : null;
    return h("ul", { className: "list-unstyled mb-0" }, props.tests.map(function (test) {
      var outcome = props.results && props.results[test];
      return h("li", { key: test }, h("code", null, test), outcome ? " " + outcome : null);
    }));
  }

  function Loading(props) {
    if (props.error) return h("div", { className: "alert alert-danger" }, props.error);
    return h("p", null, "Loading…");
  }

  function BisectionList() {
    var backend = Router.useSearchParams()[0].get("backend");
    var url = "plugins/crcr/api/bisections?limit=100" + (backend ? "&backend=" + encodeURIComponent(backend) : "");
    var answer = useJson(url);
    var rows = answer.data && answer.data.bisections;
    return h("div", { className: "container", "data-crcr": "bisections" },
      h("h2", null, "Bisections", backend ? " of " + backend : ""),
      h("p", null, "When a build has new failures and more than one upstream commit lies between it and its " +
        "baseline, the relay builds commits of that range to find each failing test's first bad commit."),
      !rows ? h(Loading, answer) : !rows.length ? h("p", null, "No bisection yet.") :
        h("table", { className: "table table-hover table-striped" },
          h("thead", null, h("tr", null, ["bisection", "backend", "range", "state", "steps", "culprits", "started",
            "ended"].map(function (c) { return h("th", { key: c }, c); }))),
          h("tbody", null, rows.map(function (b) {
            return h("tr", { key: b.id },
              h("td", null, h("a", { href: b.url }, "#" + b.id)),
              h("td", null, b.backend),
              h("td", null, h(Range, { good: b.good_sha, bad: b.bad_sha }), " (" + b.commit_count + " commits)"),
              h("td", null, h(Badge, { value: b.state })),
              h("td", null, b.step_count),
              h("td", null, joined(b.culprits, function (c) { return h(CommitLink, { sha: c.sha }); })),
              h("td", null, when(b.started_at)),
              h("td", null, when(b.ended_at)));
          }))));
  }

  function HowStarted(props) {
    var b = props.bisection;
    if (b.trigger_build) {
      return h("span", null, "Started by the new failures of ",
        h("a", { href: b.trigger_build.url }, "build " + b.trigger_build.number));
    }
    if (b.requested_by) return h("span", null, "Requested by " + b.requested_by);
    if (b.trigger_buildid) return h("span", null, "Started by build " + b.trigger_buildid + " (no longer listed)");
    return null;
  }

  function StepBuild(props) {
    var step = props.step;
    if (step.build) return h("a", { href: step.build.url }, "build " + step.build.number);
    if (step.brid) return h("a", { href: "#/buildrequests/" + step.brid }, "request " + step.brid);
    return null;
  }

  function Steps(props) {
    var b = props.bisection;
    if (!b.steps.length) return h("p", null, "No build yet.");
    return h("table", { className: "table table-striped", "data-crcr": "steps" },
      h("thead", null, h("tr", null, ["step", "commit", "tests run", "outcome", "build"].map(function (c) {
        return h("th", { key: c }, c);
      }))),
      h("tbody", null, b.steps.map(function (step, i) {
        return h("tr", { key: i },
          h("td", null, i + 1),
          h("td", null, h(CommitLink, { sha: step.sha }), " (" + (step.position + 1) + " of " + b.commit_count + ")"),
          h("td", null, h(TestList, { tests: step.tests, results: step.results })),
          h("td", null, h(Badge, { value: step.outcome })),
          h("td", null, h(StepBuild, { step: step })));
      })));
  }

  function Culprits(props) {
    var b = props.bisection;
    if (!b.culprits.length) {
      return h("p", null, b.state === "running" ? "No first bad commit found yet." : "No culprit.");
    }
    return h("table", { className: "table table-striped", "data-crcr": "culprits" },
      h("thead", null, h("tr", null, h("th", null, "first bad commit"), h("th", null, "tests it broke"),
        h("th", null, "untested commits just before it (the first bad one may be one of them)"))),
      h("tbody", null, b.culprits.map(function (c) {
        return h("tr", { key: c.sha },
          h("td", null, h(CommitLink, { sha: c.sha }), " (" + (c.index + 1) + " of " + b.commit_count + ")"),
          h("td", null, h(TestList, { tests: c.tests })),
          h("td", null, c.untested.length
            ? joined(c.untested, function (sha) { return h(CommitLink, { sha: sha }); })
            : h("span", { className: "text-muted" }, "none")));
      })));
  }

  function BisectionPage() {
    var id = Router.useParams().bisectionid;
    var answer = useJson("plugins/crcr/api/bisections/" + encodeURIComponent(id));
    var b = answer.data;
    if (!b) return h("div", { className: "container" }, h("h2", null, "Bisection #" + id), h(Loading, answer));
    return h("div", { className: "container", "data-crcr": "bisection" },
      h("h2", null, "Bisection #" + b.id + " of " + b.backend + " on " + b.branch + " ", h(Badge, { value: b.state })),
      h("p", null, "Range ", h(Range, { good: b.good_sha, bad: b.bad_sha }), ": " + b.commit_count +
        " commits after the last good one. ", h(HowStarted, { bisection: b }), ". Started " + when(b.started_at),
        b.ended_at ? ", ended " + when(b.ended_at) : "", ". ", h("a", { href: "#/bisections" }, "All bisections"), "."),
      b.plan_error ? h("div", { className: "alert alert-danger" }, "This relay cannot read the bisection's state: " +
        b.plan_error) : null,
      h("h4", null, "Newly failing tests"),
      h(TestList, { tests: b.tests }),
      h("h4", { className: "mt-3" }, "Result"),
      h(Culprits, { bisection: b }),
      b.unresolved.length ? h("div", null, h("strong", null, "Unresolved tests"), h(TestList, { tests: b.unresolved }))
        : null,
      h("h4", { className: "mt-3" }, "Steps"),
      h(Steps, { bisection: b }),
      b.next && b.state === "running" ? h("p", null, "Next build: ", h(CommitLink, { sha: b.next.sha }), " running ",
        b.next.tests.length + " test" + (b.next.tests.length === 1 ? "" : "s") + ".") : null);
  }

  // --- health (the JSON of plugins/crcr/api/health, see www/health.py and buildmaster/services/every_master/health.py) ---

  var RANGES = ["24h", "7d", "30d"];
  var DEFAULT_RANGE = "7d";
  // A commit's verdict, a build's results and a test's outcome in Buildbot's result colours.
  var STATE_CLASSES = {
    success: "SUCCESS", failure: "FAILURE", error: "EXCEPTION", pending: "PENDING", warnings: "WARNINGS",
    skipped: "SKIPPED", exception: "EXCEPTION", retry: "RETRY", cancelled: "CANCELLED",
    failing: "FAILURE", passing: "SUCCESS", failed: "FAILURE", errored: "EXCEPTION", flaky: "WARNINGS",
    up: "SUCCESS", silent: "WARNINGS", stopped: "CANCELLED",  // a master's (health/masters.py)
    connected: "SUCCESS", paused: "EXCEPTION", disconnected: "CANCELLED",  // a unit's (www/units.py)
    passed: "SUCCESS", known_failures: "WARNINGS", "no failure": "SUCCESS", "suite broken": "EXCEPTION",
  };
  // A backend's state (its tip's, not one commit's verdict: docs/health.md) in words.
  var STATE_WORDS = { failing: "failing", known_failures: "known failures", error: "error", passing: "passing" };
  var TITLE_SHOWN = 72;  // characters of a commit's title in a table; the whole one in its tooltip

  function healthApi(path) {
    return "plugins/crcr/api/health" + path;
  }

  function backendPath(backend) {
    return "/" + encodeURIComponent(backend);
  }

  function StateBadge(props) {
    var badge = h("span", { className: "bb-badge-status results_" + (STATE_CLASSES[props.value] || "UNKNOWN"),
      "data-state": props.value }, props.text || props.value);
    return props.href ? h("a", { href: props.href, title: props.title }, badge) : badge;
  }

  // As crcr status says it: the two largest units, a zero second one left out ('45s', '12m 5s', '1h 12m', '3d 4h').
  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "—";
    var units = [["d", 86400], ["h", 3600], ["m", 60], ["s", 1]];
    for (var i = 0; i < units.length - 1; i++) {
      if (seconds >= units[i][1]) {
        var rest = Math.floor((seconds % units[i][1]) / units[i + 1][1]);
        return Math.floor(seconds / units[i][1]) + units[i][0] + (rest ? " " + rest + units[i + 1][0] : "");
      }
    }
    return seconds + "s";
  }

  // Rounded half up to one decimal, none when it is 0 ("66.7%", "50%"): the rule of the charts and crcr status too
  // (health/percentages.py, docs/health.md), so that every view reads the same rate alike.
  function percent(rate) {
    if (rate === null || rate === undefined) return "—";
    var shown = Math.round(rate * 1000) / 10;
    return shown + "%";
  }

  // "2026-12-03 10:00 UTC (3h 5m ago)"
  function since(seconds, now) {
    if (!seconds) return "";
    return when(seconds) + " (" + duration(Math.max(now - seconds, 0)) + " ago)";
  }

  function plural(count, word) {
    return count + " " + word + (count === 1 ? "" : "s");
  }

  function Muted(props) {
    return h("span", { className: "text-muted" }, props.children);
  }

  function useRange() {
    var range = Router.useSearchParams()[0].get("range");
    return RANGES.indexOf(range) >= 0 ? range : DEFAULT_RANGE;
  }

  // Links, not state: the range stays in the address, for reloads and links to share.
  function RangePicker(props) {
    return h("div", { className: "btn-group mb-3", role: "group", "data-crcr": "range" },
      RANGES.map(function (r) {
        return h("a", { key: r, href: props.base + "?range=" + r, "data-range": r,
          className: "btn btn-sm " + (r === props.range ? "btn-primary active" : "btn-outline-primary") }, r);
      }));
  }

  function CommitTitle(props) {
    var title = props.title;
    if (!title) return h(Muted, null, "—");
    return h("span", { title: title, "data-title": "" },
      title.length > TITLE_SHOWN ? title.slice(0, TITLE_SHOWN - 1) + "…" : title);
  }

  // The backend's state, and since which commit tests fail at its tip, whatever its commits' own verdicts say.
  function BackendState(props) {
    var row = props.row, first = row.failing_since;
    if (!row.state) return h(Muted, null, "no verdict yet");
    var badge = h(StateBadge, { value: row.state, text: STATE_WORDS[row.state] });
    if (!first) return badge;
    return h("span", null, badge, h("br"),
      h("a", { href: row.page }, plural(row.failing_tests, "test") + " failing"), " since ",
      h(CommitLink, { sha: first.sha, href: first.commit_url }), " ", h(CommitTitle, { title: first.title }),
      h("br"), h(Muted, null, since(first.since, props.now)));
  }

  // The newest upstream commit's verdict (linked to the build that decided it), and the first commit of its
  // streak, and since when.
  function Latest(props) {
    var latest = props.latest, now = props.now;
    if (!latest) return h(Muted, null, "no verdict yet");
    return h("span", null,
      h(StateBadge, { value: latest.state, href: latest.build_url, title: latest.description }),
      latest.infrastructure ? h("span", { className: "text-muted", "data-marker": "infrastructure" }, " infrastructure")
        : null,
      " at ", h(CommitLink, { sha: latest.sha, href: latest.commit_url }), " ", h(CommitTitle, { title: latest.title }),
      h("br"), h(Muted, null, "since "), h(CommitLink, { sha: latest.since_sha, href: latest.since_commit_url }),
      h(Muted, null, ", " + since(latest.since, now)));
  }

  function Latency(props) {
    var l = props.latency;
    if (!l.decided) return h(Muted, null, "none decided");
    return h("span", { className: "text-nowrap" }, "p50 " + duration(l.p50), h("br"), "p95 " + duration(l.p95),
      h("br"), h(Muted, null, plural(l.decided, "commit") + " decided"));
  }

  // The commits the hardware failed (every try of a suite hit it) and those not relevant to the backend (decided
  // unbuilt) are counted apart, out of the rate.
  function PassRate(props) {
    var v = props.row.verdicts;
    function apart(figure, text) {
      return text ? h("span", { "data-figure": figure }, h("br"), h(Muted, null, text)) : null;
    }
    var hardware = apart("infrastructure", v.infrastructure &&
      plural(v.infrastructure, "infrastructure error") + ", not counted");
    var unbuilt = apart("not-relevant", v.not_relevant && v.not_relevant + " not relevant, not built");
    if (props.row.pass_rate === null) return h("span", null, h(Muted, null, "—"), hardware, unbuilt);
    var judged = v.success + v.failure + v.error;
    return h("span", null, percent(props.row.pass_rate), h("br"),
      h(Muted, null, v.success + " of " + judged + " passed" + (v.error ? ", " + plural(v.error, "error") : "")),
      hardware, unbuilt);
  }

  function Builds(props) {
    var row = props.row;
    if (!row.builds) return h("span", null, "0");
    return h("span", null, row.builds, h("br"), h(Muted, null, row.timeouts
      ? row.timeouts + " timed out (" + percent(row.timeout_rate) + ")" : "no timeout"));
  }

  function Queue(props) {
    var q = props.queue;
    if (!q.length) return h("span", null, "0");
    return h("span", null, q.length, h("br"), h(Muted, null, "oldest "),
      h(CommitLink, { sha: q.oldest_sha }), h(Muted, null, " waiting " + duration(q.oldest_age)));
  }

  function Units(props) {
    var u = props.units;
    if (!u.declared) return h(Muted, null, "inactive: no host offers its device");
    var short = u.connected < u.declared;
    return h("span", { className: short ? "text-danger" : null }, u.connected + " / " + u.declared,
      h("br"), h(Muted, null, "connected"));
  }

  function FailingCount(props) {
    var row = props.row;
    if (!row.failing_tests) return h("span", null, "0");
    return h("a", { href: row.page, className: "text-danger fw-bold" }, row.failing_tests);
  }

  // The figures of a summary row, each in a cell carrying its name (data-figure), for a row or a page.
  var FIGURES = [
    ["state", "state", function (row, now) { return h(BackendState, { row: row, now: now }); }],
    ["latest", "newest verdict", function (row, now) { return h(Latest, { latest: row.latest, now: now }); }],
    ["latency", "time to verdict", function (row) { return h(Latency, { latency: row.latency }); }],
    ["pass-rate", "pass rate", function (row) { return h(PassRate, { row: row }); }],
    ["builds", "builds", function (row) { return h(Builds, { row: row }); }],
    ["queue", "queue", function (row) { return h(Queue, { queue: row.queue }); }],
    ["units", "units", function (row) { return h(Units, { units: row.units }); }],
    ["failing", "failing tests", function (row) { return h(FailingCount, { row: row }); }],
  ];

  function HealthTable(props) {
    var summary = props.summary, notLoaded = summary.not_loaded || [];
    if (!summary.backends.length && !notLoaded.length) return h("p", null, "No backend.");
    return h("table", { className: "table table-hover", "data-crcr": "health-summary" },
      h("thead", null, h("tr", null, h("th", null, "backend"),
        FIGURES.map(function (f) { return h("th", { key: f[0] }, f[1]); }))),
      h("tbody", null, summary.backends.map(function (row) {
        return h("tr", { key: row.backend, "data-backend": row.backend },
          h("td", { "data-figure": "backend" }, h("a", { href: row.page }, h("strong", null, row.backend)), h("br"),
            h(Muted, null, row.level + " · " + row.device)),
          FIGURES.map(function (f) {
            return h("td", { key: f[0], "data-figure": f[0] }, f[2](row, summary.now));
          }));
      }).concat(notLoaded.map(NotLoadedRow))));
  }

  // A backend whose file the master's start left out (it did not validate): no figures, only why.
  function NotLoadedRow(left) {
    return h("tr", { key: "not-loaded " + left.backend, "data-backend": left.backend, className: "table-danger" },
      h("td", { "data-figure": "backend" }, h("strong", null, left.backend)),
      h("td", { colSpan: FIGURES.length, "data-figure": "not-loaded" },
        h("strong", null, "not loaded: "), "its file did not validate at the master's start; fix it, check it " +
          "with crcr check, then run crcr master reconfig",
        h("pre", { className: "mb-0", style: { whiteSpace: "pre-wrap" } }, left.error)));
  }

  function rangeWords(range) {
    return { "24h": "the last 24 hours", "7d": "the last 7 days", "30d": "the last 30 days" }[range] || range;
  }

  // The summary's masters: which one leads (runs the relay's once-per-event duties), each one's newest sign of life.
  function Masters(props) {
    var masters = props.summary.masters, now = props.summary.now;
    return h("section", { "data-crcr": "masters" }, h("h4", null, "Masters"),
      h("table", { className: "table table-sm" },
        h("thead", null, h("tr", null, ["master", "state", "last sign of life", "leader"].map(function (c) {
          return h("th", { key: c }, c);
        }))),
        h("tbody", null, masters.map(function (m) {
          return h("tr", { key: m.name, "data-master": m.name },
            h("td", null, m.name),
            h("td", { "data-figure": "state" }, h(StateBadge, { value: m.state })),
            h("td", null, since(m.last_active, now)),
            h("td", { "data-figure": "leader" }, m.leader ? "leads since " + since(m.leader_since, now)
              : h(Muted, null, "—")));
        }))));
  }

  // The shared builds' and build stages' figures (health/stage_builds.py): what a maintainer checks of the builds
  // that make torch, as crcr status words them.
  function StageBuilds(props) {
    var rows = props.stage_builds || [];  // none from a master older than this page
    if (!rows.length) return null;
    return h(Section, { title: "Builds (shared builds and build stages, " + rangeWords(props.range) + ")" },
      h("table", { className: "table table-sm w-auto", "data-crcr": "stage-builds" },
        h("thead", null, h("tr", null, ["build", "kind", "successful builds", "p50", "p95", "reused",
          "compiler cache"].map(function (c) { return h("th", { key: c }, c); }))),
        h("tbody", null, rows.map(function (b) {
          var cache = b.cache;
          return h("tr", { key: b.name, "data-build": b.name },
            h("td", null, b.name), h("td", null, b.kind), h("td", { "data-figure": "successful-builds" }, b.builds),
            h("td", null, duration(b.p50)), h("td", null, duration(b.p95)),
            h("td", { "data-figure": "reused" }, b.told ? b.reused + " of " + b.told + " (" + percent(b.reused_rate) +
              ")" : h(Muted, null, b.builds ? "no reuse figures" : "—")),
            h("td", { "data-figure": "cache" }, !cache ? h(Muted, null, b.builds ? "no cache figures" : "—")
              : cache.hit_rate === null ? cache.kind + ": nothing compiled"
              : cache.kind + " hit rate " + percent(cache.hit_rate)));
        }))));
  }

  // The criteria PyTorch's HUD promotes to L3 and demotes on (health/readiness.py), each beside its target, over
  // the promotion window (14 days) and the demotion window (7 days), from the jobs crcr reports to PyTorch's relay.
  function L3Readiness(props) {
    var r = props.readiness;
    if (!r) return null;  // none from a master older than this page
    var figure = function (c) {
      if (!c) return h(Muted, null, "—");
      return h("span", { className: c.passes ? "text-success" : "text-danger fw-bold", "data-passes": String(c.passes),
        title: c.text }, (c.passes ? "✓ " : "✗ ") + c.value_text);
    };
    var demotion = {};
    r.demotion.forEach(function (c) { demotion[c.name] = c; });
    return h(Section, { title: "L3 readiness (PyTorch's HUD)" },
      h("p", { "data-crcr": "l3-verdict", "data-state": r.state }, h("strong", null, r.verdict)),
      r.state === "no_jobs" ? null : h("table", { className: "table table-sm w-auto", "data-crcr": "l3-criteria" },
        h("thead", null, h("tr", null, ["criterion", "target", "14 days (promotion)", "7 days (demotion)"]
          .map(function (c) { return h("th", { key: c }, c); }))),
        h("tbody", null, r.promotion.map(function (c) {
          return h("tr", { key: c.name, "data-criterion": c.name },
            h("td", null, c.label), h("td", null, c.target_text), h("td", null, figure(c)),
            h("td", null, c.window === null ? h(Muted, null, "promotion only") : figure(demotion[c.name])));
        }))));
  }

  // The backend's tests PyTorch disabled (health/disabled.py): those its latest run of each suite skipped, each with
  // its issue, and the state of the list the relay follows.
  function DisabledUpstream(props) {
    var d = props.disabled, now = props.now;
    if (!d) return null;  // none from a master older than this page
    var list = d.list;
    var platforms = d.platforms.length ? "its platforms " + d.platforms.join(", ") : "no platform of its own";
    return h(Section, { title: "Disabled upstream" },
      h("p", { "data-crcr": "disabled-list" }, !list ? "PyTorch's disabled tests are not followed (or not fetched " +
        "yet)." : [list.applying + " of the " + plural(list.entries, "test") + " PyTorch disables apply to this " +
        "backend (for every platform, or " + platforms + "); the list " + (list.fetched_at ? "fetched " +
        since(list.fetched_at, now) : "never fetched") + ", asked " + since(list.checked_at, now) + ".",
      list.problem ? h("span", { key: "problem", className: "text-danger", "data-crcr": "disabled-problem" },
        " Last problem: " + list.problem) : null]),
      !d.tests.length ? h("p", { "data-crcr": "disabled-tests" }, "No test skipped as disabled in its latest runs.")
        : h("table", { className: "table table-sm table-striped", "data-crcr": "disabled-tests" },
          h("thead", null, h("tr", null, ["test", "suite", "issue"].map(function (c) {
            return h("th", { key: c }, c);
          }))),
          h("tbody", null, d.tests.map(function (t) {
            return h("tr", { key: t.suite + " " + t.test, "data-test": t.test },
              h("td", null, h("code", null, t.test)), h("td", null, t.suite),
              h("td", null, h("a", { href: t.issue_url }, "#" + t.issue)));
          }))));
  }

  function HealthSummary() {
    var range = useRange();
    var answer = useJson(healthApi("?range=" + range));
    return h("div", { className: "container-fluid", "data-crcr": "health" },
      h("h2", null, "Health of the backends"),
      h("p", null, "Worst first: failing (the newest upstream commit's verdict a failure), then tests still " +
        "failing at the tip or an error, then backends without a verdict, then passing; then by pass rate. A " +
        "backend's state is its tip's: a commit's own verdict says only what that commit changed. Figures over " +
        rangeWords(range) + "; time to verdict runs from the relay seeing an upstream commit to its verdict."),
      h(RangePicker, { range: range, base: "#/health" }),
      answer.data ? h(HealthTable, { summary: answer.data }) : h(Loading, answer),
      answer.data ? h(StageBuilds, { stage_builds: answer.data.stage_builds, range: range }) : null,
      answer.data ? h(Masters, { summary: answer.data }) : null,
      answer.data ? h(IssueProblems, { problems: answer.data.issue_problems || [] }) : null);
  }

  // The backends whose issues per break the relay may not write (checked at each reconfig): they wait in the outbox.
  function IssueProblems(props) {
    if (!props.problems.length) return null;
    return h("section", { "data-crcr": "issue-problems" }, h("h4", null, "Issues per break not written"),
      h("ul", null, props.problems.map(function (p) {
        return h("li", { key: p.backend, "data-backend": p.backend }, h("strong", null, p.backend + ": "), p.problem);
      })));
  }

  function Windows(props) {
    return h("table", { className: "table table-sm w-auto", "data-crcr": "windows" },
      h("thead", null, h("tr", null, ["range", "decided", "p50", "p95", "pass rate"].map(function (c) {
        return h("th", { key: c }, c);
      }))),
      h("tbody", null, RANGES.map(function (r) {
        var w = props.windows[r];
        return h("tr", { key: r, "data-range": r }, h("td", null, r), h("td", null, w.decided),
          h("td", null, duration(w.p50)), h("td", null, duration(w.p95)), h("td", null, percent(w.pass_rate)));
      })));
  }

  function Charts(props) {
    var base = healthApi(backendPath(props.backend) + "/charts/");
    return h("div", { className: "row g-2 mb-3", "data-crcr": "charts" },
      ["latency", "pass_rate", "queue"].map(function (name) {
        return h("div", { key: name, className: "col-xxl-4 col-lg-6" },
          h("img", { src: base + name + ".svg?range=" + props.range, "data-chart": name,
            alt: name.replace("_", " ") + " chart", className: "img-fluid border" }));
      }));
  }

  function BuildLink(props) {
    if (!props.href) return h(Muted, null, "—");
    return h("a", { href: props.href }, props.text || "build");
  }

  function FirstBad(props) {
    var bad = props.first_bad;
    if (!bad) return h(Muted, null, "not bisected");
    return h("span", null, h(CommitLink, { sha: bad.sha, href: bad.commit_url }), " (",
      h("a", { href: bad.bisection_url }, "bisection #" + bad.bisection), ")");
  }

  function Section(props) {
    return h("section", { className: "mt-4" }, h("h4", null, props.title), props.children);
  }

  function FailingTests(props) {
    var page = props.page;
    if (!page.failing.length) return h("p", { "data-crcr": "failing" }, "No test failing now.");
    return h("table", { className: "table table-sm table-striped", "data-crcr": "failing" },
      h("thead", null, h("tr", null, ["test", "suite", "failing since", "builds failing", "first failing commit",
        "first bad commit (bisection)"].map(function (c) { return h("th", { key: c }, c); }))),
      h("tbody", null, page.failing.map(function (f) {
        return h("tr", { key: f.suite + " " + f.test, "data-test": f.test },
          h("td", null, h("a", { href: f.page }, h("code", null, f.test))),
          h("td", null, f.suite),
          h("td", null, since(f.since, page.now)),
          h("td", null, f.builds_failing),
          h("td", null, h(CommitLink, { sha: f.first_failing_sha, href: f.first_failing_commit_url }), " ",
            h(CommitTitle, { title: f.first_failing_title }), " ", h(BuildLink, { href: f.first_failing_build_url })),
          h("td", null, h(FirstBad, { first_bad: f.first_bad })));
      })));
  }

  function FlakyTests(props) {
    var page = props.page;
    if (!page.flaky.length) return h("p", { "data-crcr": "flaky" }, "No flaky run in " + rangeWords(page.range) + ".");
    return h("table", { className: "table table-sm table-striped", "data-crcr": "flaky" },
      h("thead", null, h("tr", null, ["test", "suite", "flaky runs", "last flaky"].map(function (c) {
        return h("th", { key: c }, c);
      }))),
      h("tbody", null, page.flaky.map(function (f) {
        return h("tr", { key: f.suite + " " + f.test, "data-test": f.test },
          h("td", null, h("a", { href: f.page }, h("code", null, f.test))),
          h("td", null, f.suite),
          h("td", null, f.flaky_runs + " of " + plural(f.runs, "run")),
          h("td", null, since(f.last_flaky_at, page.now)));
      })));
  }

  function cellWords(cell) {
    var words = [cell.passed + " passed"];
    if (cell.failed) words.push(cell.failed + " failed" + (cell.new ? " (" + cell.new + " new)" : ""));
    if (cell.flaky) words.push(cell.flaky + " flaky");
    if (cell.skipped) words.push(cell.skipped + " skipped");
    if (cell.timed_out) words.push("timed out");
    return words;
  }

  function MatrixCell(props) {
    var cell = props.cell;
    if (!cell) return h("td", { "data-suite": props.suite }, h(Muted, null, "—"));
    var words = cellWords(cell);
    // The cell says what matters most; its tooltip has every count.
    var shown = cell.timed_out ? "timed out" : cell.failed ? words[1] : cell.flaky ? cell.flaky + " flaky" : words[0];
    // Buildbot colours a "label" by its results class; a block inside the cell, as Bootstrap's table paints the
    // cells' own background.
    var colour = "label d-block px-1 rounded text-decoration-none results_" +
      (STATE_CLASSES[cell.results] || "UNKNOWN");
    return h("td", { "data-suite": props.suite, title: (props.note ? props.note + ": " : "") + words.join(", ") },
      props.build_url ? h("a", { href: props.build_url, className: colour }, shown)
        : h("span", { className: colour }, shown));
  }

  // A commit a bisection decided has no deciding build: its row shows the bisection's newest build of it, which
  // ran only the tests the bisection asked.
  var BISECTION_BUILD = "a bisection's build: only the tests it asked";

  function MatrixBuild(props) {
    var c = props.commit;
    var link = h(BuildLink, { href: c.build_url, text: c.build_number !== null ? "#" + c.build_number : null });
    if (c.build_kind !== "bisection") return h("td", null, link);
    return h("td", { title: BISECTION_BUILD, "data-build-kind": c.build_kind }, link, " ",
      h("small", { className: "text-muted" }, "bisection"));
  }

  function Matrix(props) {
    var matrix = props.matrix;
    if (!matrix.commits.length) return h("p", { "data-crcr": "matrix" }, "No upstream commit seen yet.");
    return h("div", { className: "table-responsive" },
      h("table", { className: "table table-sm table-bordered", "data-crcr": "matrix" },
        h("thead", null, h("tr", null, ["commit", "title", "author", "seen", "verdict", "build"].map(function (c) {
          return h("th", { key: c }, c);
        }), matrix.suites.map(function (s) { return h("th", { key: s }, s); }))),
        h("tbody", null, matrix.commits.map(function (c) {
          return h("tr", { key: c.sha, "data-sha": c.sha },
            h("td", null, h(CommitLink, { sha: c.sha, href: c.commit_url })),
            h("td", null, h(CommitTitle, { title: c.title })),
            h("td", { className: "text-nowrap" }, c.author || h(Muted, null, "—")),
            h("td", { className: "text-nowrap" }, when(c.seen_at)),
            h("td", null, h(StateBadge, { value: c.state, title: c.description }), " ", h(Muted, null, c.how || ""),
              c.covered_by ? h("span", { "data-marker": "covered" }, " by ", h(CommitLink, { sha: c.covered_by }))
                : null,
              c.bisected ? h("span", { "data-marker": "bisected" }, " ", h("span", { className: "badge bg-info" },
                "bisected")) : null),
            h(MatrixBuild, { commit: c }),
            matrix.suites.map(function (s) {
              return h(MatrixCell, { key: s, suite: s, cell: c.cells[s], build_url: c.build_url,
                note: c.build_kind === "bisection" ? BISECTION_BUILD : null });
            }));
        }))));
  }

  function RecentBisections(props) {
    var rows = props.bisections;
    if (!rows.length) return h("p", { "data-crcr": "recent-bisections" }, "No bisection yet.");
    return h("table", { className: "table table-sm table-striped", "data-crcr": "recent-bisections" },
      h("thead", null, h("tr", null, ["bisection", "range", "state", "first bad commits", "started", "ended"]
        .map(function (c) { return h("th", { key: c }, c); }))),
      h("tbody", null, rows.map(function (b) {
        return h("tr", { key: b.id },
          h("td", null, h("a", { href: b.url }, "#" + b.id)),
          h("td", null, h(Range, { good: b.good_sha, bad: b.bad_sha })),
          h("td", null, h(Badge, { value: b.state })),
          h("td", null, b.culprits.length ? joined(b.culprits, function (sha) { return h(CommitLink, { sha: sha }); })
            : h(Muted, null, "none")),
          h("td", null, when(b.started_at)),
          h("td", null, when(b.ended_at)));
      })));
  }

  function PullRequests(props) {
    var rows = props.pull_requests;
    if (!rows.length) return h("p", { "data-crcr": "pull-requests" }, "No pull request built yet.");
    return h("table", { className: "table table-sm table-striped", "data-crcr": "pull-requests" },
      h("thead", null, h("tr", null, ["pull request", "head", "results", "build", "finished"].map(function (c) {
        return h("th", { key: c }, c);
      }))),
      h("tbody", null, rows.map(function (pr) {
        return h("tr", { key: pr.build_url, "data-pr": pr.number },
          h("td", null, h("a", { href: pr.url }, "#" + pr.number), " " + (pr.title || "")),
          h("td", null, h(CommitLink, { sha: pr.sha })),
          h("td", null, h(StateBadge, { value: pr.results })),
          h("td", null, h(BuildLink, { href: pr.build_url })),
          h("td", null, when(pr.complete_at)));
      })));
  }

  // A backend's flaky tests in quarantine (plugins/crcr/api/quarantine/<backend>, www/quarantine.py): each with its
  // since, by, why and clean runs so far, and a Release button for its maintainers and the admins, which asks why;
  // then the latest moves.
  function QuarantineSection(props) {
    var url = "plugins/crcr/api/quarantine/" + encodeURIComponent(props.backend);
    var loads = React.useState(0), state = React.useState({ data: null, error: null });
    var refused = React.useState(null);
    React.useEffect(function () {
      var alive = true;
      fetchJson(url).then(
        function (data) { if (alive) state[1]({ data: data, error: null }); },
        function (e) { if (alive) state[1]({ data: null, error: String(e.message || e) }); });
      return function () { alive = false; };
    }, [url, loads[0]]);
    var q = state[0].data;
    if (!q) return h(Loading, state[0]);
    function release(t) {
      var why = global.prompt("Why release " + t.test + " from quarantine?");
      if (!why || !why.trim()) return;
      fetch(url, { method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ move: "out", suite: t.suite, test: t.test, why: why }) }).then(function (r) {
        return r.json().then(function (body) {
          refused[1](r.ok ? null : body.error || "HTTP " + r.status);
          loads[1](loads[0] + 1);
        });
      }).catch(function (e) { refused[1](String(e.message || e)); });
    }
    var s = q.settings;
    var rule = (s.flakes ? "A test that flakes " + plural(s.flakes, "time") + " within " + plural(s.days, "day") +
      " goes in" : "Tests go in by hand only") + "; " + plural(s.clean_runs, "clean run") + " in a row take it out. " +
      "A test in quarantine still runs and is shown, but its failures decide no verdict.";
    return h("div", null, h("p", null, rule),
      refused[0] ? h("div", { className: "alert alert-danger", "data-crcr": "quarantine-error" }, refused[0]) : null,
      h(QuarantinedTests, { backend: props.backend, quarantine: q, release: q.may_move ? release : null }),
      q.moves.length ? h("h5", null, "Latest moves") : null,
      q.moves.length ? h(QuarantineMoves, { moves: q.moves }) : null);
  }

  function QuarantinedTests(props) {
    var q = props.quarantine, release = props.release;
    if (!q.quarantined.length) return h("p", { "data-crcr": "quarantine" }, "No test in quarantine.");
    return h("table", { className: "table table-sm table-striped", "data-crcr": "quarantine" },
      h("thead", null, h("tr", null, ["test", "suite", "since", "by", "why", "clean runs", ""].map(function (c, i) {
        return h("th", { key: i }, c);
      }))),
      h("tbody", null, q.quarantined.map(function (t) {
        var page = "#/health/" + encodeURIComponent(props.backend) + "/test?id=" + encodeURIComponent(t.test);
        return h("tr", { key: t.suite + " " + t.test, "data-test": t.test },
          h("td", null, h("a", { href: page }, h("code", null, t.test))),
          h("td", null, t.suite), h("td", null, when(t.since)), h("td", null, t.who), h("td", null, t.why),
          h("td", null, t.clean_runs + " of " + q.settings.clean_runs),
          h("td", null, release ? h("button", { className: "btn btn-sm btn-outline-secondary", "data-crcr": "release",
            onClick: function () { release(t); } }, "Release") : null));
      })));
  }

  function QuarantineMoves(props) {
    return h("table", { className: "table table-sm", "data-crcr": "quarantine-moves" },
      h("thead", null, h("tr", null, ["when", "move", "test", "suite", "by", "why"].map(function (c) {
        return h("th", { key: c }, c);
      }))),
      h("tbody", null, props.moves.map(function (m, i) {
        return h("tr", { key: i, "data-move": m.move },
          h("td", { className: "text-nowrap" }, when(m.at)), h("td", null, m.move),
          h("td", null, h("code", null, m.test)), h("td", null, m.suite),
          h("td", null, m.who + (m.automatic ? "" : " (by hand)")), h("td", null, m.why));
      })));
  }

  function BackendHealth() {
    var backend = Router.useParams().backend;
    var range = useRange();
    var answer = useJson(healthApi(backendPath(backend) + "?range=" + range));
    var page = answer.data;
    var title = h("h2", null, "Health of " + backend);
    if (!page) return h("div", { className: "container-fluid" }, title, h(Loading, answer));
    var hasPullRequests = page.level === "L3" || page.level === "L4";
    return h("div", { className: "container-fluid", "data-crcr": "backend-health" },
      title,
      h("p", null, page.level + " backend on " + page.device + ": " + page.description + ". ",
        h("a", { href: "#/health?range=" + range }, "All backends"), ", ",
        h("a", { href: "#/bisections?backend=" + encodeURIComponent(backend) }, "its bisections"), "."),
      h(RangePicker, { range: range, base: "#/health/" + encodeURIComponent(backend) }),
      h("div", { className: "row" },
        h("div", { className: "col-auto" }, h("table", { className: "table table-sm", "data-crcr": "figures" },
          h("tbody", null, FIGURES.map(function (f) {
            return h("tr", { key: f[0] }, h("th", null, f[1]), h("td", { "data-figure": f[0] }, f[2](page, page.now)));
          })))),
        h("div", { className: "col-auto" }, h("h5", null, "Time to verdict and pass rate by range"),
          h(Windows, { windows: page.windows }))),
      h(Charts, { backend: backend, range: range }),
      h(StageBuilds, { stage_builds: page.stage_builds, range: range }),
      h(L3Readiness, { readiness: page.l3_readiness }),
      h(Section, { title: "Failing tests" }, h(FailingTests, { page: page })),
      h(Section, { title: "Flakiest tests" }, h(FlakyTests, { page: page })),
      h(Section, { title: "The last " + page.matrix.commits.length + " upstream commits, newest upstream first" },
        h(Matrix, { matrix: page.matrix })),
      h(Section, { title: "Recent bisections" }, h(RecentBisections, { bisections: page.bisections })),
      hasPullRequests ? h(Section, { title: "Recent pull request builds" },
        h(PullRequests, { pull_requests: page.pull_requests })) : null,
      h(DisabledUpstream, { disabled: page.disabled_upstream, now: page.now }),
      h(Section, { title: "Quarantine" }, h(QuarantineSection, { backend: backend })));
  }

  function TestHealth() {
    var backend = Router.useParams().backend;
    var id = Router.useSearchParams()[0].get("id") || "";
    var answer = useJson(healthApi(backendPath(backend) + "/test?id=" + encodeURIComponent(id)));
    var t = answer.data;
    var title = h("h2", null, h("code", null, id));
    if (!t) return h("div", { className: "container-fluid" }, title, h(Loading, answer));
    return h("div", { className: "container-fluid", "data-crcr": "test-health" },
      title,
      h("p", null, "Suite " + t.suite + " of ", h("a", { href: "#/health/" + encodeURIComponent(backend) }, backend),
        ". Now ", h(StateBadge, { value: t.state }),
        t.state === "failing" ? h("span", null, " since " + since(t.failing_since, t.now) + ", first at ",
          h(CommitLink, { sha: t.first_failing_sha })) : null, "."),
      t.state === "failing" ? h("p", { "data-crcr": "first-bad" }, "First bad commit: ",
        h(FirstBad, { first_bad: t.first_bad })) : null,
      h("p", { "data-crcr": "counts" }, "Over the kept history: " + t.counts.failed + " failed, " + t.counts.errored +
        " errored, " + t.counts.flaky + " flaky, " + t.counts.passed + " passed, " + t.counts["no failure"] +
        " with no failure recorded (passed, skipped or not there yet), " + t.counts["suite broken"] +
        " in a suite that did not run whole (the test may not have run); " +
        plural(t.flaky_runs, "flaky run") + " in the last 30 days."),
      h(Section, { title: "Its runs" }, !t.runs.length ? h("p", null, "No run recorded.") :
        h("table", { className: "table table-sm table-striped", "data-crcr": "runs" },
          h("thead", null, h("tr", null, ["build", "commit", "kind", "outcome", "finished"].map(function (c) {
            return h("th", { key: c }, c);
          }))),
          h("tbody", null, t.runs.map(function (run) {
            return h("tr", { key: run.buildid, "data-build": run.buildid },
              h("td", null, h(BuildLink, { href: run.build_url, text: "#" + run.number })),
              h("td", null, h(CommitLink, { sha: run.sha, href: run.commit_url })),
              h("td", null, run.kind),
              h("td", null, h(StateBadge, { value: run.outcome }), run.broken ? h("small", { "data-crcr": "broken" },
                run.outcome === "suite broken" ? ": did not run whole: " + run.broken :
                  " (its suite did not run whole: " + run.broken + ")") : null),
              h("td", null, when(run.complete_at)));
          })))));
  }

  // The home page's view of the summary: every backend's row over the default range.
  function HomeHealth() {
    var answer = useJson(healthApi("?range=" + DEFAULT_RANGE));
    return h("section", { className: "mb-4", "data-crcr": "home-health" },
      h("h4", null, "Health over " + rangeWords(DEFAULT_RANGE) + " ",
        h("small", null, h("a", { href: "#/health" }, "health summary"))),
      answer.data ? h(HealthTable, { summary: answer.data }) : h(Loading, answer));
  }

  // --- units (the JSON of plugins/crcr/api/units, see www/units.py) ---

  // Paused first (taken out, most often by the relay after hardware failures), then the highest hardware failure
  // rate, a unit without builds last; the API's order, by name, within each (sort is stable).
  function unitOrder(a, b) {
    function rate(unit) { return unit.rate === null ? -1 : unit.rate; }
    return (b.paused - a.paused) || (rate(b) - rate(a));
  }

  function UnitName(props) {
    var u = props.unit;
    return h("span", null, h("a", { href: "#/workers/" + u.workerid }, h("strong", null, u.name)),
      u.host ? h("span", null, h("br"), h(Muted, null, u.host + " · " + u.device)) : null);
  }

  function UnitState(props) {
    var u = props.unit;
    var state = u.paused ? "paused" : u.connected ? "connected" : "disconnected";
    return h("span", null, h(StateBadge, { value: state }),
      u.paused && !u.connected ? h(Muted, null, " (disconnected)") : null,
      u.paused ? h("span", null, h("br"), h("span", { "data-crcr": "pause-reason" },
        u.pause_reason || "no reason given")) : null);
  }

  function LastFailure(props) {
    var f = props.failure;
    if (!f) return h(Muted, null, "—");
    var what = h("code", null, f.what);
    return h("span", null, f.build_url ? h("a", { href: f.build_url, title: "the build it failed" }, what) : what,
      h("br"), h(Muted, null, when(f.at)));
  }

  // The figures of a unit's row, each in a cell carrying its name (data-figure).
  var UNIT_FIGURES = [
    ["unit", "unit", function (u) { return h(UnitName, { unit: u }); }],
    ["state", "state", function (u) { return h(UnitState, { unit: u }); }],
    ["builds", "builds run", function (u) { return u.builds; }],
    ["infra-failures", "hardware failures", function (u) { return u.infra_failures; }],
    ["rate", "rate", function (u) { return percent(u.rate); }],
    ["card", "card", function (u) { return u.card ? h("code", null, u.card) : h(Muted, null, "—"); }],
    ["last-failure", "last failure", function (u) { return h(LastFailure, { failure: u.last_failure }); }],
  ];

  function UnitsTable(props) {
    var units = props.units.slice().sort(unitOrder);
    if (!units.length) {
      return h("p", { "data-crcr": "no-units" },
        "No unit: no host is attached to the relay yet (crcr worker register).");
    }
    return h("table", { className: "table table-hover", "data-crcr": "units-table" },
      h("thead", null, h("tr", null, UNIT_FIGURES.map(function (f) { return h("th", { key: f[0] }, f[1]); }))),
      h("tbody", null, units.map(function (u) {
        return h("tr", { key: u.name, "data-unit": u.name }, UNIT_FIGURES.map(function (f) {
          return h("td", { key: f[0], "data-figure": f[0] }, f[2](u));
        }));
      })));
  }

  function UnitsPage() {
    var answer = useJson("plugins/crcr/api/units");
    var title = h("h2", null, "Units");
    if (!answer.data) return h("div", { className: "container-fluid" }, title, h(Loading, answer));
    return h("div", { className: "container-fluid", "data-crcr": "units" },
      title,
      h("p", null, "Each unit (a worker: one accelerator of a host) over the last " + answer.data.days + " days: " +
        "the builds it ran, of any backend and kind (a fanned-out commit's build stage, shared builds and suite " +
        "children one each, where Health counts the commit's build once), those of them that hit the hardware and " +
        "their rate, and its card (as it " +
        "named it when it connected, else as its last failure recorded). A unit whose builds keep hitting the hardware is paused, saying why; its worker page's " +
        "unpause (or crcr worker resume) puts it back."),
      h(UnitsTable, { units: answer.data.units }));
  }

  // Buildbot's top-level menu entries have an icon: a pulse line, drawn here rather than pulled from a library.
  function PulseIcon() {
    return h("svg", { viewBox: "0 0 16 16", width: "1em", height: "1em", fill: "none", stroke: "currentColor",
      strokeWidth: 1.6, strokeLinejoin: "round", strokeLinecap: "round" },
      h("polyline", { points: "1,9 4,9 6,4 9,13 11,7 12,9 15,9" }));
  }

  // --- the top bar's controls, for a visitor not signed in ---
  // Buildbot's UI shows its buttons (rebuild, stop, cancel, the force forms, the workers' actions) to everyone, and
  // the Authz refuses an anonymous visitor only once the form is filled in and sent. For such a visitor each becomes
  // "Sign in to …", which signs in and comes back. The top bar's store is Buildbot's (BuildbotUi.TopbarStore), made
  // before plugins load, and every page sets its buttons through its setActions on each render.
  // What a build's or request's page shows while it acts, and the link to a rebuild's request: no control. Nor are
  // the buttons with an icon and no caption, the waterfall's zoom in and out, which anyone may use.
  var NOT_CONTROLS = ["Rebuilt", "Rebuild pending", "Rebuilding...", "Stopping...", "Cancelling..."];
  var SIGN_IN_CAPTIONS = { "Actions...": "Sign in for worker actions" };

  function signInFirst(action) {
    if (!action.caption || NOT_CONTROLS.indexOf(action.caption) >= 0) return action;
    var caption = action.caption;
    return {
      caption: SIGN_IN_CAPTIONS[caption] || "Sign in to " + caption.charAt(0).toLowerCase() + caption.slice(1),
      variant: "outline-secondary",
      help: "Only a signed-in maintainer or admin may do this",
      action: function () {
        global.location.href = "auth/login?redirect=" + encodeURIComponent(global.location.hash.slice(1) || "/");
      },
    };
  }

  function anonymousControlsSignInFirst() {
    var config = global.buildbotFrontendConfig, Topbar = (global.BuildbotUi || {}).TopbarStore;
    if (!config || !config.user || !config.user.anonymous || !Topbar) return;
    var setActions = Topbar.prototype.setActions;
    Topbar.prototype.setActions = function (actions) { return setActions.call(this, actions.map(signInFirst)); };
  }

  // Buildbot's rebuild, stop and cancel buttons show a refusal as "Cannot …: " + error.error.message, and the worker
  // actions join the errors as text, but its REST client rejects with axios's own error, which has neither: the
  // refusal of a signed-in user without the right showed nothing. Each refused call gets the JSON-RPC error the
  // master answered (its force form reads the response itself, and is left as it is).
  function refusalsSayWhy() {
    if (!global.axios) return;
    global.axios.interceptors.response.use(null, function (e) {
      var answered = e && e.response && e.response.data && e.response.data.error;
      if (answered) {
        e.error = answered;
        if (typeof answered.message === "string") e.toString = function () { return answered.message; };
      }
      return Promise.reject(e);
    });
  }

  // --- Buildbot's tag filters (the waterfall's, the grid's, the builders page's; ?tags=tag, +tag or -tag) ---
  // Its tag list offered '_virtual_', the tag Buildbot gives every virtual builder (a fanned-out backend's child
  // builds show as one each), and showed an excluded tag (-tag) in the colour of a chosen one. The list leaves it out
  // and shows an excluded tag struck out. TagFilterManager is Buildbot's class (BuildbotUi), which every view uses.
  var BUILDBOT_TAGS = ["_virtual_"];

  function tagFiltersTellExcluded() {
    var Filter = (global.BuildbotUi || {}).TagFilterManager;
    if (!Filter) return;
    Filter.prototype.isExcluded = function (tag) { return this.tags.indexOf("-" + tag) >= 0; };
    Filter.prototype.isTagFiltered = function (tag) {
      return this.tags.length === 0 || this.tags.indexOf(tag) >= 0 || this.tags.indexOf("+" + tag) >= 0;
    };
    Filter.prototype.getElementsForTags = function (tags) {
      var filter = this;
      return tags.filter(function (tag) { return BUILDBOT_TAGS.indexOf(tag) < 0; }).map(function (tag) {
        var excluded = filter.isExcluded(tag);
        var chosen = filter.isTagFiltered(tag) ? " bb-tag-filter-manager-tag-filtered" : "";
        var shown = excluded ? " crcr-tag-excluded" : chosen;
        return h("span", { key: tag },
          h("span", { className: "bb-tag-filter-manager-tag clickable" + shown,
            title: excluded ? "left out (-" + tag + "): click to clear" : null,
            onClick: function () { filter.toggleTag(tag); } }, tag), " ");
      });
    };
  }

  // Buildbot's console view (4.3) reads no filter: the home page's link (?tags=-crcr-child, a fanned-out backend's
  // child builds left out) showed a column per child. While a console page is open, the builders Buildbot's REST
  // client fetches for it are cut to those its tags show, as the waterfall's filter would; the console fetches them
  // once, so a console asked with other tags is loaded anew.
  function consolePageTags() {
    var page = /^#\/console(?:\?(.*))?$/.exec(global.location.hash);
    return page && new URLSearchParams(page[1] || "");
  }

  function consoleFollowsTags() {
    var Filter = (global.BuildbotUi || {}).TagFilterManager;
    if (!global.axios || !Filter) return;
    var fetchedWith = null;  // the console's tags its builders were cut with
    global.axios.interceptors.response.use(function (response) {
      var asked = consolePageTags(), url = (response.config && response.config.url) || "";
      if (asked && /\/api\/v2\/builders$/.test(url) && response.data && response.data.builders) {
        var filter = new Filter(asked, function () {}, "tags");
        response.data.builders = response.data.builders.filter(function (b) {
          return filter.shouldShowByTags(b.tags);
        });
        fetchedWith = asked.getAll("tags").join(",");
      }
      return response;
    });
    global.addEventListener("hashchange", function () {
      var asked = consolePageTags();
      if (!asked) fetchedWith = null;
      else if (fetchedWith !== null && asked.getAll("tags").join(",") !== fetchedWith) global.location.reload();
    });
  }

  anonymousControlsSignInFirst();
  refusalsSayWhy();
  tagFiltersTellExcluded();
  consoleFollowsTags();

  global.BuildbotPluginSupport.buildbotSetupPlugin(function (reg) {
    // Registered after Buildbot's own routes, so this one replaces its home page.
    reg.registerRoute({ route: "/", group: "home", element: function () { return h(RelayHome); } });
    reg.registerMenuGroup({ name: "health", parentName: null, caption: "Health", icon: h(PulseIcon), order: 2,
      route: "/health" });
    reg.registerRoute({ route: "/health", group: "health", element: function () { return h(HealthSummary); } });
    reg.registerRoute({ route: "/health/:backend", group: "health",
      element: function () { return h(BackendHealth); } });
    reg.registerRoute({ route: "/health/:backend/test", group: "health",
      element: function () { return h(TestHealth); } });
    reg.registerMenuGroup({ name: "bisections", parentName: "builds", caption: "Bisections", order: null,
      route: "/bisections" });
    reg.registerRoute({ route: "/bisections", group: "builds", element: function () { return h(BisectionList); } });
    reg.registerRoute({ route: "/bisections/:bisectionid", group: "builds",
      element: function () { return h(BisectionPage); } });
    reg.registerMenuGroup({ name: "units", parentName: "builds", caption: "Units", order: null, route: "/units" });
    reg.registerRoute({ route: "/units", group: "builds", element: function () { return h(UnitsPage); } });
  });
})(globalThis);
