// tenure's dashboard (docs/dashboard.md). Plain JavaScript, no library and
// nothing fetched from elsewhere. Every update loop is a blocking query
// (?index=&wait=) with backoff on errors; times tick locally from what the
// server sent. Everything shown goes through textContent, never HTML.
'use strict';

const WAIT = '30s';              // a blocking query's wait: the cluster panel is never older
const BACKOFF_MS = [500, 1000, 2000, 4000, 8000, 15000];
const TOKEN_KEY = 'tenure-token';
const NOT_AN_API_PATH = 'not a recognized HTTP API endpoint';
const SVG_NS = 'http://www.w3.org/2000/svg';  // a namespace name: nothing is fetched

const state = {
  kv: [],                  // locked KV entries
  keys: new Set(),         // every key the token may read, locked or not
  kvFiltered: false,
  sessions: [],
  ttlDeadline: new Map(),  // session id -> local ms the leader expires it unless renewed
  ttlReread: new Map(),    // session id -> local ms of its last one-off re-read
  history: new Map(),      // key -> {records, missing, error}
  historyMissing: false,   // the server has no /v1/tenure/history
  recipeHistory: new Map(),  // "<name>/" -> {name, family}: the recipe elections whose history is asked
  firstSeen: new Map(),    // "key fence" -> local ms when this page first saw the grant
  armed: new Map(),        // session id -> local ms until which its invalidate is armed
  rowErrors: new Map(),    // session id -> text of the last refused invalidate
  clockSkewMs: 0,          // server's Date minus this browser's clock
};
let generation = 0;        // bumps when the token changes: older loops stop
let controller = new AbortController();

const $ = (id) => document.getElementById(id);

function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

async function api(path, options = {}) {
  const headers = {};
  if (token()) headers['X-Consul-Token'] = token();
  const response = await fetch(path, {...options, headers, signal: controller.signal,
                                       cache: 'no-store', credentials: 'omit'});
  const date = Date.parse(response.headers.get('Date') || '');
  if (!Number.isNaN(date)) state.clockSkewMs = date - Date.now();
  return response;
}

class HttpError extends Error {
  constructor(status, text) {
    super(`${status}: ${text.trim() || 'no text'}`);
    this.status = status;
  }
}

function sleep(ms) { return new Promise((resolve) => setTimeout(resolve, ms)); }

// Long-polls `path` forever (until the token changes): onData(body, response)
// for each answer. accept(status) lets 404s through as data. The index
// resets when it goes backwards (a restored or new leader), as Consul advises.
async function watch(name, path, onData, accept = () => false, shouldStop = () => false) {
  const mine = generation;
  let index = 0;
  let failures = 0;
  while (mine === generation && !shouldStop()) {
    try {
      const sep = path.includes('?') ? '&' : '?';
      const response = await api(`${path}${sep}index=${index}&wait=${WAIT}`);
      if (mine !== generation) return;
      const text = await response.text();
      if (!response.ok && !accept(response.status, text)) throw new HttpError(response.status, text);
      const next = Number(response.headers.get('X-Consul-Index') || 0);
      index = next >= index && next > 0 ? next : 0;
      failures = 0;
      setLoopError(name, '');
      if (onData(response.ok ? JSON.parse(text) : null, response, text) === 'stop') return;
      if (index === 0) await sleep(BACKOFF_MS[0]);  // no index to block on: do not spin
    } catch (error) {
      if (mine !== generation || error.name === 'AbortError') return;
      const delay = BACKOFF_MS[Math.min(failures, BACKOFF_MS.length - 1)];
      failures += 1;
      setLoopError(name, `${error.message} (retrying in ${delay / 1000}s)`);
      await sleep(delay);
    }
  }
}

const loopErrors = new Map();
function setLoopError(name, text) {
  loopErrors.set(name, text);
  const target = $(`${name}-error`);
  if (target) target.textContent = text;
  const bad = [...loopErrors.values()].some((t) => t);
  $('status').textContent = bad ? 'errors: retrying' : 'live';
  $('status').className = bad ? 'bad' : '';
}

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function duration(ms) {
  // The skew is learnt from the Date header, to the second: a grant stamped
  // a moment ago may look up to a second or two in the future.
  if (ms < 0 && ms > -2500) ms = 0;
  if (!(ms >= 0)) return '?';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor(s / 60) % 60).padStart(2, '0')}m`;
}

function serverNow() { return Date.now() + state.clockSkewMs; }

function decodeValue(b64) {
  if (!b64) return '';
  try {
    const text = new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
    return text.length > 200 ? text.slice(0, 200) + '…' : text;
  } catch (e) {
    return '(binary)';
  }
}

function sessionById(id) { return state.sessions.find((s) => s.ID === id); }

// Who holds a key: the candidate its value names (tenure's elections write
// {"Candidate": NAME}), else the session's name, and the session's node.
function holderText(entry) {
  let name = '';
  try {
    const value = JSON.parse(decodeValue(entry.Value));
    if (value && typeof value.Candidate === 'string') name = value.Candidate;
  } catch (e) { /* not JSON: the session's name */ }
  const s = sessionById(entry.Session);
  if (!name) name = (s && s.Name) || entry.Session.slice(0, 8);
  return s ? `${name} @ ${s.Node}` : name;
}

// The grant this page knows of for the key's current holder: the history's
// open record when the server keeps one, else when this page first saw it.
function grantTime(entry, historyKey = entry.Key) {
  const h = state.history.get(historyKey);
  const open = h && h.records && h.records.length ? h.records[h.records.length - 1] : null;
  if (open && !open.EndedAt && open.Fence === entry.Fence) {
    const t = Date.parse(open.GrantedAt);
    if (!Number.isNaN(t)) return {at: t, exact: true};
  }
  const seen = state.firstSeen.get(`${entry.Key} ${entry.Fence}`);
  return {at: seen === undefined ? serverNow() : seen, exact: false};
}

// Who waits is knowable for two layouts: tenure's elections (P/leader, and
// P/candidates/<name> locked by each candidate's session) and Consul's
// semaphores (P/.lock, and P/<session> per contender). A plain lock key has
// no queue the server shows.
function contenders(entry) {
  let prefix = null;
  if (entry.Key.endsWith('/leader')) prefix = entry.Key.slice(0, -'leader'.length) + 'candidates/';
  if (entry.Key.endsWith('/.lock')) prefix = entry.Key.slice(0, -'.lock'.length);
  if (prefix === null) return null;
  return state.kv.filter((e) => e.Key !== entry.Key && e.Key.startsWith(prefix) &&
                                !e.Key.slice(prefix.length).includes('/') &&
                                e.Session !== entry.Session);
}

function waitingFor(entry) {
  const waiting = contenders(entry);
  if (waiting === null) return '—';
  if (!waiting.length) return 'none';
  const tenure = entry.Key.endsWith('/leader');
  return waiting.map((e) => (tenure ? e.Key.slice(e.Key.lastIndexOf('/') + 1) : holderText(e)))
    .join(', ');
}

// The number of a numbered session (an etcd lease, a ZooKeeper session:
// 00000000-0000-0000-HHHH-HHHHHHHHHHHH) as a signed 64-bit BigInt, or null.
function sessionNumber(id) {
  const m = /^00000000-0000-0000-([0-9a-f]{4})-([0-9a-f]{12})$/.exec(id || '');
  return m ? BigInt.asIntN(64, BigInt('0x' + m[1] + m[2])) : null;
}

// The recipes' elections and locks, where each contender holds a key of
// its own and the one with the lowest CreateIndex leads (docs/history.md):
// etcd's (etcdctl elect/lock, the Go concurrency package), a key
// `<name>/<lease hex>` held by its lease; ZooKeeper's (kazoo's and
// Curator's Lock, Election, LeaderLatch), an ephemeral sequential node
// `<name>/<prefix><10 digits>` held by its session (named "zookeeper"),
// whose sequence order is its creation order. {name, family} of the
// election, or null for another key.
function recipeElectionOf(entry) {
  const n = sessionNumber(entry.Session);
  if (n === null) return null;
  // Go's %x of an int64: a minus sign and the magnitude for a negative one.
  const hex = n < 0n ? '-' + (-n).toString(16) : n.toString(16);
  if (entry.Key.endsWith('/' + hex)) {
    return {name: entry.Key.slice(0, entry.Key.length - hex.length - 1), family: 'etcd'};
  }
  const s = sessionById(entry.Session);
  const slash = entry.Key.lastIndexOf('/');
  if (s && s.Name === 'zookeeper' && slash > 0 && /\d{10}$/.test(entry.Key)) {
    return {name: entry.Key.slice(0, slash), family: 'ZooKeeper'};
  }
  return null;
}

// The rows of the elections panel: {key, entry (the holder's), recipe
// (null, or the family of a recipe election), waiting (entries, in line
// order, for a recipe's)}. A recipe election is one row keyed "<name>/",
// its leader's key the entry.
function electionRows() {
  const rows = [];
  const recipes = new Map();  // "<name>/" -> {name, family, entries: its contenders'}
  for (const e of state.kv) {
    const recipe = recipeElectionOf(e);
    if (recipe !== null) {
      const key = recipe.name + '/';
      if (!recipes.has(key)) recipes.set(key, {...recipe, entries: []});
      recipes.get(key).entries.push(e);
    } else if (!isContender(e)) {
      rows.push({key: e.Key, entry: e, recipe: null});
    }
  }
  for (const [key, {name, family, entries}] of recipes) {
    entries.sort((a, b) => a.CreateIndex - b.CreateIndex);
    rows.push({key, name, entry: entries[0], recipe: family, waiting: entries.slice(1)});
  }
  return rows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

// A recipe contender's name: its value where short (etcdctl elect's
// proclamation, kazoo's identifier, Curator's id), else its session's name
// (a ZooKeeper session as ZooKeeper prints it, 0x...), and its node.
function recipeHolderText(entry) {
  const value = decodeValue(entry.Value);
  const s = sessionById(entry.Session);
  let name = value && value.length <= 64 ? value : ((s && s.Name) || entry.Session.slice(-8));
  if (!(value && value.length <= 64) && s && s.Name === 'zookeeper') {
    name = '0x' + BigInt.asUintN(64, sessionNumber(entry.Session)).toString(16);
  }
  return s ? `${name} @ ${s.Node}` : name;
}

// A contender's own key (a registration, not an election): not a row and
// no timeline. Told by its sibling lock key existing (held or not).
function isContender(entry) {
  const candidates = entry.Key.lastIndexOf('/candidates/');
  if (candidates >= 0 && !entry.Key.slice(candidates + 12).includes('/') &&
      state.keys.has(entry.Key.slice(0, candidates) + '/leader')) return true;
  const slash = entry.Key.lastIndexOf('/');
  if (slash < 0 || entry.Key.endsWith('/.lock')) return false;
  return state.keys.has(entry.Key.slice(0, slash + 1) + '.lock');
}

function renderElections() {
  const body = $('elections').tBodies[0];
  body.replaceChildren();
  const elections = electionRows();
  for (const election of elections) {
    const entry = election.entry;
    const row = el('tr', undefined, 'election');
    row.dataset.key = election.key;
    if (election.recipe) row.dataset.recipe = election.recipe;
    row.append(el('td', election.recipe ? `${election.name} (${election.recipe})` : entry.Key,
                  'key mono'));
    const holder = el('td', election.recipe ? recipeHolderText(entry) : holderText(entry),
                      'holder');
    holder.title = `session ${entry.Session}\nvalue ${decodeValue(entry.Value)}`;
    holder.dataset.session = entry.Session;
    row.append(holder, el('td', entry.Fence ?? '?', 'fence num'));
    const held = el('td', '', 'held num');
    row.append(held);
    const s = sessionById(entry.Session);
    const ttl = el('td', ttlText(s), 'ttl num');
    ttl.title = s && state.ttlDeadline.has(s.ID)
      ? `Time until the leader expires the session unless its holder renews it (TTL ${s.TTL}; ` +
        'read again when it runs out: docs/dashboard.md).'
      : 'The session\'s TTL (no countdown: the server did not send TTLRemaining).';
    const waiting = election.recipe
      ? (election.waiting.map(recipeHolderText).join(', ') || 'none') : waitingFor(entry);
    row.append(ttl, el('td', waiting, 'waiting'));
    body.append(row);
  }
  $('elections-empty').hidden = elections.length > 0;
  $('elections-note').textContent = state.kvFiltered
    ? 'Some keys are hidden: the token may not read them.' : '';
  tick();
}

// The leader's TTLRemaining (nanoseconds, docs/consul-compat.md), as a local
// deadline. Renewals move it later without waking the session watch, so a
// countdown that runs out is read again once (rereadTtl), not polled.
function noteTtl(sessions) {
  const now = Date.now();
  for (const s of sessions) {
    if (typeof s.TTLRemaining === 'number') {
      state.ttlDeadline.set(s.ID, now + s.TTLRemaining / 1e6);
    } else {
      state.ttlDeadline.delete(s.ID);
    }
  }
}

function ttlText(s) {
  if (!s || !s.TTL) return 'none';
  const deadline = state.ttlDeadline.get(s.ID);
  if (deadline === undefined) return s.TTL;
  return duration(Math.max(0, deadline - Date.now()));
}

async function rereadTtl(id) {
  const now = Date.now();
  if (now - (state.ttlReread.get(id) || 0) < 1000) return;
  state.ttlReread.set(id, now);
  try {
    const response = await api(`/v1/session/info/${encodeURIComponent(id)}`);
    if (!response.ok) return;
    noteTtl(await response.json());
    tick();
  } catch (error) {
    // The session watch reports errors; an expired session leaves with it.
  }
}

// Once a second: the "held for" and TTL cells, from the grant time and the
// TTL deadline (no request, unless a deadline ran out).
function tick() {
  const rows = new Map(electionRows().map((r) => [r.key, r]));
  for (const row of $('elections').tBodies[0].rows) {
    const election = rows.get(row.dataset.key);
    if (!election) continue;
    const entry = election.entry;
    const grant = grantTime(entry, election.key);
    const text = duration(serverNow() - grant.at);
    row.querySelector('.held').textContent = grant.exact ? text : `≥ ${text}`;
    const s = sessionById(entry.Session);
    row.querySelector('.ttl').textContent = ttlText(s);
    const deadline = s && state.ttlDeadline.get(s.ID);
    if (deadline !== undefined && deadline <= Date.now()) rereadTtl(s.ID);
  }
}

function renderSessions() {
  const body = $('sessions').tBodies[0];
  body.replaceChildren();
  const now = Date.now();
  for (const s of state.sessions) {
    const row = el('tr', undefined, 'session');
    row.dataset.id = s.ID;
    const locks = state.kv.filter((e) => e.Session === s.ID).map((e) => e.Key);
    row.append(el('td', s.ID, 'mono id'), el('td', s.Name || '', 'name'),
               el('td', s.Node, 'node'), el('td', s.TTL || 'none', 'num'),
               el('td', s.Behavior, ''), el('td', duration(s.LockDelay / 1e6), 'num'),
               el('td', locks.join(', ') || '—', 'locks mono'));
    const action = el('td');
    const armed = (state.armed.get(s.ID) || 0) > now;
    const button = el('button', armed ? 'Confirm invalidate' : 'Invalidate',
                      armed ? 'invalidate armed' : 'invalidate');
    button.type = 'button';
    button.addEventListener('click', () => invalidate(s.ID));
    action.append(button);
    const error = state.rowErrors.get(s.ID);
    if (error) action.append(el('span', error, 'row-error'));
    row.append(action);
    body.append(row);
  }
  $('sessions-empty').hidden = state.sessions.length > 0;
}

// Two clicks: the first arms the button for 5 s, the second destroys the
// session (its locks are released, or deleted with Behavior "delete").
async function invalidate(id) {
  const now = Date.now();
  if ((state.armed.get(id) || 0) <= now) {
    state.armed.set(id, now + 5000);
    renderSessions();
    setTimeout(renderSessions, 5100);
    return;
  }
  state.armed.delete(id);
  state.rowErrors.delete(id);
  try {
    const response = await api(`/v1/session/destroy/${encodeURIComponent(id)}`, {method: 'PUT'});
    const text = await response.text();
    if (!response.ok) state.rowErrors.set(id, `${response.status}: ${text.trim()}`);
  } catch (error) {
    if (error.name !== 'AbortError') state.rowErrors.set(id, error.message);
  }
  renderSessions();
}

function renderTimelines() {
  const box = $('timelines');
  box.replaceChildren();
  if (state.historyMissing) {
    $('timeline-note').textContent =
      'This server keeps no lock history (GET /v1/tenure/history answers 404): no timelines.';
    return;
  }
  const keys = [...state.history.keys()].sort();
  const shown = keys.filter((k) => (state.history.get(k).records || []).length);
  $('timeline-note').textContent = shown.length ? '' : 'No lock history to draw yet.';
  for (const key of shown) {
    const records = state.history.get(key).records.slice(-20);
    const part = el('div', undefined, 'timeline');
    part.dataset.key = key;
    const recipe = state.recipeHistory.get(key);
    part.append(el('h3', recipe !== undefined ? `${recipe.name} (${recipe.family})` : key,
                   'mono'));
    const start = Date.parse(records[0].GrantedAt);
    const end = serverNow();
    const span = Math.max(end - start, 1000);
    const svg = document.createElementNS(SVG_NS, 'svg');
    svg.setAttribute('viewBox', '0 0 1000 22');
    svg.setAttribute('preserveAspectRatio', 'none');
    const list = el('ol');
    for (const r of records) {
      const from = Date.parse(r.GrantedAt);
      const to = r.EndedAt ? Date.parse(r.EndedAt) : end;
      const rect = document.createElementNS(SVG_NS, 'rect');
      rect.setAttribute('x', String(Math.max(0, (from - start) / span * 1000)));
      rect.setAttribute('width', String(Math.max(2, (to - from) / span * 1000)));
      rect.setAttribute('y', '2');
      rect.setAttribute('height', '18');
      rect.setAttribute('fill', colour(r.Session));
      const title = document.createElementNS(SVG_NS, 'title');
      title.textContent = `fence ${r.Fence}: ${r.SessionName || r.Session} (${r.EndCause || 'held'})`;
      rect.append(title);
      svg.append(rect);
      const ended = r.EndedAt ? `${new Date(to).toLocaleTimeString()} (${r.EndCause})` : 'now (held)';
      const who = r.Key ? `${r.Key} (${r.SessionName || r.Session.slice(0, 8)})`
        : (r.SessionName || r.Session.slice(0, 8));
      list.append(el('li', `fence ${r.Fence} · ${who} @ ` +
                           `${r.Node} · ${new Date(from).toLocaleTimeString()} → ${ended}`));
    }
    part.append(svg, list);
    box.append(part);
  }
}

function colour(text) {
  let h = 0;
  for (const c of String(text)) h = (h * 31 + c.charCodeAt(0)) % 360;
  return `hsl(${h}, 55%, 55%)`;
}

// A key's history changes only when its holder does, which the blocking KV
// query reports: each KV answer fetches the history of the elections whose
// holder (session and fence) changed since, two at a time (candidates'
// registrations are not elections and get none). One long-poll
// per key would exhaust the browser's six connections to the server.
const historyWanted = new Map();   // key -> "session fence" (or "free") to fetch for
const historyHave = new Map();     // key -> the one fetched
let historyRunning = 0;

function noteHolders() {
  const elections = electionRows();
  for (const r of elections) {
    if (!r.recipe) continue;
    state.recipeHistory.set(r.key, {name: r.name, family: r.recipe});
    // A contender's own key is no election: forget a timeline fetched for
    // it before its session told it apart (the sessions came second).
    for (const e of [r.entry, ...r.waiting]) {
      historyWanted.delete(e.Key);
      historyHave.delete(e.Key);
      state.history.delete(e.Key);
    }
  }
  // A recipe election's history changes with any of its contenders.
  const locked = new Map(elections.map((r) => [r.key, r.recipe
    ? [r.entry, ...r.waiting].map((e) => `${e.Session} ${e.Fence}`).join(',')
    : `${r.entry.Session} ${r.entry.Fence}`]));
  for (const key of new Set([...historyWanted.keys(), ...locked.keys()])) {
    historyWanted.set(key, locked.get(key) || 'free');
  }
  fetchHistories();
}

function fetchHistories() {
  const mine = generation;
  while (!state.historyMissing && historyRunning < 2) {
    const key = [...historyWanted.keys()].find(
      (k) => historyWanted.get(k) !== historyHave.get(k) && !historyBusy.has(k));
    if (key === undefined) return;
    const want = historyWanted.get(key);
    historyRunning += 1;
    historyBusy.add(key);
    fetchHistory(key).then((ok) => {
      if (mine !== generation) return;
      historyRunning -= 1;
      historyBusy.delete(key);
      if (ok) historyHave.set(key, want);
      fetchHistories();
    });
  }
}
const historyBusy = new Set();

// GET /v1/tenure/history/<key>: 200 with the records, oldest first; 404 for
// a key that never held a lock, or (Consul's text) a server without it.
// A recipe election's ("<name>/"): GET /v1/tenure/history/<name>?succession,
// its leaders in the same records with each one's Key.
async function fetchHistory(key) {
  const recipe = state.recipeHistory.get(key);
  const escaped = (k) => k.split('/').map(encodeURIComponent).join('/');
  const path = recipe !== undefined
    ? `/v1/tenure/history/${escaped(recipe.name)}?succession`
    : `/v1/tenure/history/${escaped(key)}`;
  try {
    const response = await api(path);
    const text = await response.text();
    if (response.status === 404) {
      if (text.includes(NOT_AN_API_PATH)) state.historyMissing = true;
      state.history.delete(key);
    } else if (!response.ok) {
      throw new HttpError(response.status, text);
    } else {
      const records = JSON.parse(text);
      state.history.set(key, {records: Array.isArray(records) ? records : []});
    }
    setLoopError('timeline', '');
    renderTimelines();
    renderElections();
    return true;
  } catch (error) {
    if (error.name === 'AbortError') return false;
    setLoopError('timeline', `history of ${key}: ${error.message} (again at the next change)`);
    return true;  // not retried in a loop: the next change of holder asks again
  }
}

async function refreshCluster() {
  try {
    const leader = await (await api('/v1/status/leader')).json();
    $('cluster-leader').textContent = leader || 'none known';
    const configResponse = await api('/v1/operator/raft/configuration');
    const configText = await configResponse.text();
    if (!configResponse.ok) throw new HttpError(configResponse.status, configText);
    const config = JSON.parse(configText);
    // 429 is autopilot's "not every server is healthy", with the same body.
    const healthResponse = await api('/v1/operator/autopilot/health');
    const healthText = await healthResponse.text();
    const health = healthResponse.ok || healthResponse.status === 429 ? JSON.parse(healthText) : null;
    const byId = new Map((health ? health.Servers : []).map((s) => [s.ID, s]));
    const body = $('members').tBodies[0];
    body.replaceChildren();
    for (const server of config.Servers) {
      const h = byId.get(server.ID) || {};
      const row = el('tr', undefined, 'member');
      row.append(el('td', server.Node), el('td', server.ID, 'num'), el('td', server.Address, 'mono'),
                 el('td', server.Leader ? 'leader' : 'follower'), el('td', server.Voter ? 'yes' : 'no'),
                 el('td', h.LastContact ?? '?', 'num'), el('td', h.LastIndex ?? '?', 'num'),
                 el('td', h.Healthy === undefined ? '?' : (h.Healthy ? 'yes' : 'no')));
      body.append(row);
    }
    const lead = health ? health.Servers.find((s) => s.Leader) : null;
    $('cluster-term').textContent = lead ? lead.LastTerm : '?';
    $('cluster-commit').textContent = lead ? lead.LastIndex : '?';
    $('cluster-healthy').textContent = health
      ? `${health.Healthy ? 'yes' : 'no'} (failure tolerance ${health.FailureTolerance})`
      : `? (${healthResponse.status}: ${healthText.trim()})`;
    setLoopError('cluster', '');
  } catch (error) {
    if (error.name !== 'AbortError') setLoopError('cluster', error.message);
  }
}

// The cluster endpoints cannot block: the panel is read again whenever a
// blocking query answers (a change, or its wait running out).
let clusterPending = false;
function clusterSoon() {
  if (clusterPending) return;
  clusterPending = true;
  setTimeout(() => { clusterPending = false; refreshCluster(); }, 200);
}

function start() {
  generation += 1;
  controller.abort();
  controller = new AbortController();
  historyWanted.clear();
  historyHave.clear();
  historyBusy.clear();
  historyRunning = 0;
  Object.assign(state, {kv: [], keys: new Set(), sessions: [], history: new Map(), historyMissing: false,
                       recipeHistory: new Map()});
  state.rowErrors.clear();
  loopErrors.clear();
  renderElections();
  renderSessions();
  renderTimelines();
  // No key at all: Consul's 404 with an index to block on.
  watch('elections', '/v1/kv/?recurse', (entries, response) => {
    state.kvFiltered = response.headers.has('X-Consul-Results-Filtered-By-ACLs');
    state.keys = new Set((entries || []).map((e) => e.Key));
    state.kv = (entries || []).filter((e) => e.Session);
    for (const e of state.kv) {
      const id = `${e.Key} ${e.Fence}`;
      if (!state.firstSeen.has(id)) state.firstSeen.set(id, serverNow());
    }
    renderElections();
    renderSessions();
    noteHolders();
    clusterSoon();
  }, (status) => status === 404);
  watch('sessions', '/v1/session/list', (sessions) => {
    state.sessions = sessions || [];
    state.ttlDeadline.clear();
    noteTtl(state.sessions);
    renderSessions();
    renderElections();
    // A recipe's rows are told by their sessions' names: the elections and
    // the histories to fetch may change with the sessions alone.
    noteHolders();
    clusterSoon();
  });
  refreshCluster();
}

document.addEventListener('DOMContentLoaded', () => {
  $('token').value = token();
  $('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
    start();
  });
  $('token-clear').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    $('token').value = '';
    start();
  });
  setInterval(tick, 1000);
  start();
});
