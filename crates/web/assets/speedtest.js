// wirespeed's speed-test page: ping and jitter, then download and upload over several
// streams, with live gauges and a graph, and the latency under each load (bufferbloat).
// Downloads are read as fetch streams (fast enough past 1 Gbit/s, where XHR progress events
// are not); upload progress comes from the server's own byte count, since a browser only knows
// what it handed to its socket. The result it saves is what the server measured, under the
// token /api/start gave this test, with the latencies this browser measured.
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  const GRACE = { download: 1.5, upload: 3 };
  const TICK_MS = 200;
  // Pause between latency probes under load: about ten a second on a short path, one after
  // another (each waits for the last), within the probe budget the server gives each visitor.
  const PROBE_GAP_MS = 100;
  const series = { download: [], upload: [] };
  const latencySeries = { download: [], upload: [] };
  let token = null;

  const rand = () => Math.random().toString(36).slice(2);
  const fmt = (bps) => (bps / 1e6).toFixed(bps >= 1e9 ? 0 : bps >= 1e8 ? 1 : 2);
  const setState = (s) => { document.body.dataset.state = s; };
  const status = (t) => { $('status').textContent = t; };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const intSetting = (id, lo, hi) => Math.min(hi, Math.max(lo, parseInt($(id).value, 10) || lo));
  const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

  function drawGauge(canvas, bps, max, color) {
    const c = canvas.getContext('2d');
    const w = canvas.width, h = canvas.height, r = Math.min(w / 2, h) - 14;
    c.clearRect(0, 0, w, h);
    c.lineWidth = 14;
    c.lineCap = 'round';
    c.strokeStyle = css('--line');
    c.beginPath(); c.arc(w / 2, h - 6, r, Math.PI, 2 * Math.PI); c.stroke();
    // A log scale: 1 Mbit/s to `max`, so 20 Mbit/s and 20 Gbit/s both move the needle.
    const f = bps > 1e6 ? Math.min(1, Math.log10(bps / 1e6) / Math.log10(max / 1e6)) : 0;
    if (f > 0) {
      c.strokeStyle = color;
      c.beginPath(); c.arc(w / 2, h - 6, r, Math.PI, Math.PI * (1 + f)); c.stroke();
    }
  }

  function drawGraph() {
    const canvas = $('graph'), c = canvas.getContext('2d');
    const w = canvas.width, h = canvas.height, pad = 28;
    c.clearRect(0, 0, w, h);
    const all = series.download.concat(series.upload);
    const maxY = Math.max(1e6, ...all.map((p) => p[1])) * 1.1;
    const maxX = Math.max(1, ...all.map((p) => p[0]));
    c.fillStyle = css('--muted');
    c.font = '12px system-ui, sans-serif';
    c.fillText(`${fmt(maxY)} Mbit/s`, 4, 14);
    c.fillText(`${maxX.toFixed(0)} s`, w - 30, h - 4);
    c.fillStyle = css('--dl');
    c.fillText('Download', w - 150, 14);
    c.fillStyle = css('--ul');
    c.fillText('Upload', w - 80, 14);
    // Latency under load on a second scale (right), dashed, in each direction's colour.
    const lat = latencySeries.download.concat(latencySeries.upload);
    const maxMs = Math.max(1, ...lat.map((p) => p[1])) * 1.1;
    if (lat.length) {
      c.fillStyle = css('--muted');
      c.fillText(`┄ latency, top ${maxMs.toFixed(maxMs >= 10 ? 0 : 1)} ms`, w - 150, 30);
    }
    // Each direction's line: `pts` as [s, value] on a `top` scale, `width` wide.
    const plot = (pts, color, top, width) => {
      if (pts.length < 2) return;
      c.strokeStyle = color;
      c.lineWidth = width;
      c.beginPath();
      pts.forEach(([x, y], i) => {
        const px = pad + (x / maxX) * (w - 2 * pad), py = h - pad - (y / top) * (h - 2 * pad);
        if (i === 0) c.moveTo(px, py); else c.lineTo(px, py);
      });
      c.stroke();
    };
    const colors = [['download', css('--dl')], ['upload', css('--ul')]];
    for (const [name, color] of colors) plot(series[name], color, maxY, 2);
    c.setLineDash([4, 3]);
    for (const [name, color] of colors) plot(latencySeries[name], color, maxMs, 1);
    c.setLineDash([]);
  }

  async function getJson(url, init) {
    const r = await fetch(url, Object.assign({ cache: 'no-store' }, init));
    const text = await r.text();
    if (!r.ok) throw new Error(`${url.split('?')[0]}: ${r.status} ${text.trim()}`);
    return JSON.parse(text);
  }

  // One round trip: a GET of `path`, timed as the Resource Timing request-to-response-start
  // where the browser gives it (not the time the request waited for a free connection, nor the
  // page's own busy main thread), else the wall time.
  async function roundTrip(path, signal) {
    const url = `${path}?t=${token}&r=${rand()}`;
    const t0 = performance.now();
    const r = await fetch(url, { cache: 'no-store', signal });
    await r.arrayBuffer();
    if (!r.ok) throw new Error(`${path}: ${r.status}`);
    let ms = performance.now() - t0;
    const e = performance.getEntriesByName(new URL(url, location.href).href).pop();
    if (e && e.responseStart > 0 && e.requestStart > 0 && e.responseStart - e.requestStart < ms) {
      ms = e.responseStart - e.requestStart;
    }
    performance.clearResourceTimings();
    return ms;
  }

  // Sequential GETs of the empty endpoint.
  async function ping(count) {
    const samples = [];
    for (let i = 0; i <= count; i++) {
      const ms = await roundTrip('backend/empty');
      if (i > 0) samples.push(ms); // the first opens the connection
      $('ping').textContent = Math.min(...samples.concat([ms])).toFixed(2);
    }
    const sorted = samples.slice().sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)];
    let jitter = 0;
    for (let i = 1; i < samples.length; i++) jitter += Math.abs(samples[i] - samples[i - 1]);
    jitter /= Math.max(1, samples.length - 1);
    return { ping: median, jitter };
  }

  const median = (v) => {
    if (!v.length) return null;
    const s = v.slice().sort((a, b) => a - b), m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
  };

  // Latency under load: round trips to the server's small responsiveness object, one after
  // another, for as long as `signal` lets it. On HTTP/2 they share the loaded connection; on
  // HTTP/1.1 they take a connection of their own (see `loadStreams`). Each sample is kept
  // with its time since `t0`; the figure is the median of those after the warm-up, as the
  // throughput's.
  async function loadedLatency(name, t0, signal) {
    const samples = latencySeries[name];
    const out = $(name === 'download' ? 'lat-dl' : 'lat-ul');
    while (!signal.aborted) {
      let ms;
      try {
        ms = await roundTrip('nq/small', signal);
      } catch (e) {
        if (signal.aborted) break;
        throw e;
      }
      samples.push([(performance.now() - t0) / 1000, ms]);
      out.textContent = measuredLatency(name).toFixed(1);
      await sleep(PROBE_GAP_MS);
    }
  }

  // The median loaded round trip of `name`: after the warm-up, or every sample when none
  // finished after it (a queue so deep that a probe outlasts the measurement).
  function measuredLatency(name) {
    const all = latencySeries[name];
    const settled = all.filter(([t]) => t >= GRACE[name]);
    return median((settled.length ? settled : all).map(([, ms]) => ms));
  }

  // Streams a direction may use. A browser opens at most six HTTP/1.1 connections to a server
  // and queues further requests, so over HTTP/1.1 one is left for the latency probes (and the
  // upload's progress polls); HTTP/2 and HTTP/3 carry everything on one connection.
  function loadStreams(asked) {
    const nav = performance.getEntriesByType('navigation')[0];
    return /^h[23]/.test((nav && nav.nextHopProtocol) || '') ? asked : Math.min(asked, 5);
  }

  // Runs `streams` copies of `worker` for `seconds`, sampling `bytes()` every tick; returns the
  // rate after the grace period as this browser saw it.
  async function phase(name, streams, seconds, worker, bytes, gauge, color) {
    const stop = new AbortController();
    const workers = [];
    let failure = null;
    for (let i = 0; i < streams; i++) {
      // A stream that fails is not restarted; the phase fails only if nothing got through.
      workers.push(worker(stop.signal).catch((e) => { if (!stop.signal.aborted) failure = e; }));
      await sleep(50);
    }
    const t0 = performance.now();
    const probing = loadedLatency(name, t0, stop.signal).catch((e) => { failure = failure || e; });
    let graceBytes = null, graceT = 0, prevB = 0, prevT = t0, rate = 0;
    // Measured for `seconds` after the grace period, as LibreSpeed's time_dl_max/time_ul_max.
    while (performance.now() - t0 < (GRACE[name] + seconds) * 1000) {
      await sleep(TICK_MS);
      const now = performance.now(), b = await bytes(), t = (now - t0) / 1000;
      const inst = ((b - prevB) * 8) / ((now - prevT) / 1000);
      prevB = b; prevT = now;
      series[name].push([t, inst]);
      if (t >= GRACE[name] && graceBytes === null) { graceBytes = b; graceT = now; }
      rate = graceBytes === null ? inst : ((b - graceBytes) * 8) / ((now - graceT) / 1000 || 1);
      $(name === 'download' ? 'dl' : 'ul').textContent = fmt(rate);
      drawGauge(gauge, rate, 1e11, color);
      drawGraph();
    }
    stop.abort();
    await Promise.all(workers.concat([probing]));
    if (failure && (await bytes()) === 0) throw new Error(`${name} failed: ${failure.message}`);
    return { rate, latency: measuredLatency(name) };
  }

  async function download(streams, seconds) {
    let total = 0;
    const worker = async (signal) => {
      while (!signal.aborted) {
        const r = await fetch(`backend/garbage?ckSize=1024&t=${token}&r=${rand()}`, { cache: 'no-store', signal });
        if (!r.ok) throw new Error(`download: ${r.status}`);
        const reader = r.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          total += value.byteLength;
        }
      }
    };
    return phase('download', streams, seconds, worker, async () => total, $('g-dl'), css('--dl'));
  }

  async function upload(streams, seconds) {
    // 16 MiB of random data: 1 MiB drawn once (getRandomValues gives 64 KiB a call), repeated.
    const mib = new Uint8Array(1 << 20);
    for (let o = 0; o < mib.length; o += 65536) crypto.getRandomValues(mib.subarray(o, o + 65536));
    const blob = new Blob(new Array(16).fill(mib), { type: 'application/octet-stream' });
    const worker = async (signal) => {
      while (!signal.aborted) {
        const r = await fetch(`backend/empty?t=${token}&r=${rand()}`, { method: 'POST', body: blob, cache: 'no-store', signal });
        await r.arrayBuffer();
        if (!r.ok) throw new Error(`upload: ${r.status}`);
      }
    };
    const served = async () => (await getJson(`api/progress?t=${token}`)).upload_bytes;
    return phase('upload', streams, seconds, worker, served, $('g-ul'), css('--ul'));
  }

  async function run() {
    $('start').disabled = true;
    $('saved').hidden = true;
    series.download = []; series.upload = [];
    latencySeries.download = []; latencySeries.upload = [];
    for (const id of ['lat-dl', 'lat-ul', 'grade']) $(id).textContent = '–';
    setState('running');
    try {
      const info = await getJson('api/start');
      token = info.token;
      $('client').textContent = `${info.processedString} (${info.ip.includes(':') ? 'IPv6' : 'IPv4'})`;
      const seconds = intSetting('seconds', 2, 30);
      status('Ping…');
      const p = await ping(20);
      $('ping').textContent = p.ping.toFixed(2);
      $('jitter').textContent = p.jitter.toFixed(2);
      status('Download…');
      const dl = await download(loadStreams(intSetting('dl-streams', 1, 16)), seconds);
      status('Upload…');
      const ul = await upload(loadStreams(intSetting('ul-streams', 1, 16)), seconds);
      status('Saving…');
      const saved = await getJson('api/result', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({
          t: token, download_bps: dl.rate, upload_bps: ul.rate, ping_ms: p.ping, jitter_ms: p.jitter,
          latency_down_ms: dl.latency, latency_up_ms: ul.latency,
        }),
      });
      if (saved.download_bps != null) $('dl').textContent = fmt(saved.download_bps);
      if (saved.upload_bps != null) $('ul').textContent = fmt(saved.upload_bps);
      $('grade').textContent = saved.latency_grade || '–';
      $('result-id').textContent = saved.id;
      $('result-link').href = `results/?id=${encodeURIComponent(saved.id)}`;
      $('source-note').textContent = saved.download_by_server && saved.upload_by_server
        ? 'Download and upload as the server measured them.'
        : 'Some figures are as this browser measured them.';
      $('saved').hidden = false;
      status('Done.');
      setState('done');
    } catch (e) {
      status(`Failed: ${e.message}`);
      setState('error');
    } finally {
      $('start').disabled = false;
    }
  }

  $('start').addEventListener('click', run);
  drawGauge($('g-dl'), 0, 1e11, css('--dl'));
  drawGauge($('g-ul'), 0, 1e11, css('--ul'));
  getJson('api/start').then((info) => {
    $('client').textContent = `${info.processedString} (${info.ip.includes(':') ? 'IPv6' : 'IPv4'})`;
  }).catch((e) => { $('client').textContent = `Server unreachable: ${e.message}`; });
})();
