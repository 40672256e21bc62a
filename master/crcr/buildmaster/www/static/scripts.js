// crcr's web UI plugin: the relay's home page, in place of Buildbot's "Welcome to buildbot", and the bisection
// pages (#/bisections, #/bisections/<id>). Hand-written against the globals Buildbot's UI gives its plugins
// (React, ReactRouterDOM, BuildbotPluginSupport), so it needs no JavaScript build step. What it shows comes
// from the master's www config (plugins.crcr), its REST API and the plugin's own JSON (plugins/crcr/api/).
(function (global) {
  "use strict";
  var React = global.React;
  var Router = global.ReactRouterDOM;
  var h = React.createElement;
  var RESULTS = ["success", "warnings", "failure", "skipped", "exception", "retry", "cancelled"];

  function relayConfig() {
    var config = global.buildbotFrontendConfig || {};
    return (config.plugins && config.plugins.crcr) || { backends: [], left_out: [] };
  }

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

  function useLatestBuilds() {
    var state = React.useState({ builders: {}, latest: {}, loaded: false, error: null });
    React.useEffect(function () {
      var alive = true;
      getJson("builders")
        .then(function (data) {
          var byName = {};
          data.builders.forEach(function (b) { byName[b.name] = b; });
          return Promise.all(data.builders.map(function (b) {
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
      h("td", null, builder ? latest : "inactive: no host offers its device"),
      h("td", null, b.description),
      h("td", null, h("a", { href: "#/bisections?backend=" + encodeURIComponent(b.name) }, "bisections")));
  }

  function RelayHome() {
    var relay = relayConfig();
    var data = useLatestBuilds();
    var upstream = relay.upstream || {};
    return h("div", { className: "container bb-home-view", "data-crcr": "home" },
      h("h2", null, (global.buildbotFrontendConfig || {}).title || "crcr relay"),
      h("p", null, "Relays upstream ", h("code", null, upstream.repo || ""), " (branches: ",
        (upstream.branches || []).join(", "), ") to ", relay.backends.length, " backends. See the ",
        h("a", { href: "#/waterfall" }, "waterfall"), ", the ", h("a", { href: "#/console" }, "console"),
        ", the ", h("a", { href: "#/builders" }, "builders"), ", the ", h("a", { href: "#/workers" }, "workers"),
        " and the ", h("a", { href: "#/bisections" }, "bisections"), "."),
      h(LeftOut, { problems: relay.left_out || [] }),
      h(Disconnected),
      data.error ? h("div", { className: "alert alert-warning" }, data.error) : null,
      h("table", { className: "table table-hover table-striped" },
        h("thead", null, h("tr", null,
          h("th", null, "backend"), h("th", null, "level"), h("th", null, "device"),
          h("th", null, "latest build"), h("th", null, "description"), h("th", null, ""))),
        h("tbody", null, relay.backends.map(function (b) {
          return h(BackendRow, {
            key: b.name, backend: b, builder: data.builders[b.name], build: data.latest[b.name],
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

  function CommitLink(props) {
    var base = (relayConfig().upstream || {}).commit_url;
    var text = h("code", null, props.sha.slice(0, SHORT_SHA));
    return base ? h("a", { href: base + props.sha, title: props.sha }, text) : text;
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

  global.BuildbotPluginSupport.buildbotSetupPlugin(function (reg) {
    // Registered after Buildbot's own routes, so this one replaces its home page.
    reg.registerRoute({ route: "/", group: "home", element: function () { return h(RelayHome); } });
    reg.registerMenuGroup({ name: "bisections", parentName: "builds", caption: "Bisections", order: null,
      route: "/bisections" });
    reg.registerRoute({ route: "/bisections", group: "builds", element: function () { return h(BisectionList); } });
    reg.registerRoute({ route: "/bisections/:bisectionid", group: "builds",
      element: function () { return h(BisectionPage); } });
  });
})(globalThis);
