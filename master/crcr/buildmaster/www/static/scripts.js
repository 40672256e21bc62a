// crcr's web UI plugin: the relay's home page, in place of Buildbot's "Welcome to buildbot".
// Hand-written against the globals Buildbot's UI gives its plugins (React, BuildbotPluginSupport), so it
// needs no JavaScript build step. What it shows comes from the master's www config (plugins.crcr) and its
// REST API.
(function (global) {
  "use strict";
  var React = global.React;
  var h = React.createElement;
  var RESULTS = ["success", "warnings", "failure", "skipped", "exception", "retry", "cancelled"];

  function relayConfig() {
    var config = global.buildbotFrontendConfig || {};
    return (config.plugins && config.plugins.crcr) || { backends: [], left_out: [] };
  }

  function getJson(path) {
    return fetch("api/v2/" + path, { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error(path + ": HTTP " + r.status);
      return r.json();
    });
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
      h("td", null, b.description));
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
        ", the ", h("a", { href: "#/builders" }, "builders"), " and the ", h("a", { href: "#/workers" }, "workers"), "."),
      h(LeftOut, { problems: relay.left_out || [] }),
      data.error ? h("div", { className: "alert alert-warning" }, data.error) : null,
      h("table", { className: "table table-hover table-striped" },
        h("thead", null, h("tr", null,
          h("th", null, "backend"), h("th", null, "level"), h("th", null, "device"),
          h("th", null, "latest build"), h("th", null, "description"))),
        h("tbody", null, relay.backends.map(function (b) {
          return h(BackendRow, {
            key: b.name, backend: b, builder: data.builders[b.name], build: data.latest[b.name],
          });
        }))));
  }

  global.BuildbotPluginSupport.buildbotSetupPlugin(function (reg) {
    // Registered after Buildbot's own routes, so this one replaces its home page.
    reg.registerRoute({ route: "/", group: "home", element: function () { return h(RelayHome); } });
  });
})(globalThis);
