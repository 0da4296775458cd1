// The console's only way to the service: the public /v1 API on this origin, with the
// project token as a bearer credential. The token lives in sessionStorage (this tab only) and
// is never put in a URL.
const TOKEN_KEY = 'queues.console.token';

export class APIError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || 'http_' + status;
    this.details = e.details || {};
  }
}

export function token() { return sessionStorage.getItem(TOKEN_KEY); }
export function setToken(t) { sessionStorage.setItem(TOKEN_KEY, t); }
export function clearToken() { sessionStorage.removeItem(TOKEN_KEY); }

async function call(method, path, body) {
  const headers = { Authorization: 'Bearer ' + token(), Accept: 'application/json' };
  const init = { method, headers, credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  if (res.status === 204) return null;
  let data = null;
  const text = await res.text();
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!res.ok) throw new APIError(res.status, data);
  return data;
}

const q = (id) => '/v1/queues/' + encodeURIComponent(id);

function query(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, String(v));
  const s = u.toString();
  return s ? '?' + s : '';
}

// listQueues follows the pages (at most `max` queues).
export async function listQueues(max = 1000) {
  const out = [];
  let cursor = null;
  do {
    const page = await call('GET', '/v1/queues' + query({ limit: 100, cursor }));
    out.push(...page.queues);
    cursor = page.nextCursor;
  } while (cursor && out.length < max);
  return out;
}

export const getQueue = (id) => call('GET', q(id));
export const createQueue = (body) => call('POST', '/v1/queues', body);
export const updateQueue = (id, body) => call('PATCH', q(id), body);
// browse takes an optional filter: [name, value] pairs, sent as attribute.<name>=<value> (a name
// given twice lists values any of which matches; docs/delivery-options.md#filtered-receive-and-browse).
export function browse(id, state, cursor, limit = 20, filter = []) {
  let s = query({ state, cursor, limit });
  const f = new URLSearchParams();
  for (const [k, v] of filter) f.append('attribute.' + k, v);
  if (filter.length) s += (s ? '&' : '?') + f.toString();
  return call('GET', q(id) + '/messages' + s);
}
// Fifo groups (docs/fifo.md): state "" lists all, "parked" or "active" only those.
export const listGroups = (id, state, cursor) => call('GET', q(id) + '/groups' + query({ state: state || undefined, cursor, limit: 100 }));
export const releaseGroup = (id, group) => call('POST', q(id) + '/groups/' + encodeURIComponent(group) + '/release');
export const send = (id, messages) => call('POST', q(id) + '/messages', { messages });
export const getSubscription = (id) => call('GET', q(id) + '/subscription');
export const createSubscription = (id, body) => call('POST', q(id) + '/subscription', body);
export const updateSubscription = (id, body) => call('PATCH', q(id) + '/subscription', body);
export const deleteSubscription = (id) => call('DELETE', q(id) + '/subscription');
export const rotateSecret = (id) => call('POST', q(id) + '/subscription/rotate-secret');
export const attempts = (id, limit = 50) => call('GET', q(id) + '/subscription/attempts' + query({ limit }));
export const startMoveTask = (id, body) => call('POST', q(id) + '/move-tasks', body);
export const moveTasks = (id, limit = 1) => call('GET', q(id) + '/move-tasks' + query({ limit }));
export const getMoveTask = (id, task) => call('GET', q(id) + '/move-tasks/' + encodeURIComponent(task));
export const cancelMoveTask = (id, task) => call('POST', q(id) + '/move-tasks/' + encodeURIComponent(task) + '/cancel');

// ---- topics (docs/topics.md) ----

const tp = (id) => '/v1/topics/' + encodeURIComponent(id);

// withAttrs appends [name, value] pairs as attribute.<name>=<value> to a query string.
function withAttrs(s, pairs) {
  const f = new URLSearchParams();
  for (const [k, v] of pairs) f.append('attribute.' + k, v);
  return pairs.length ? s + (s ? '&' : '?') + f.toString() : s;
}

// listTopics follows the pages (at most `max` topics).
export async function listTopics(max = 1000) {
  const out = [];
  let cursor = null;
  do {
    const page = await call('GET', '/v1/topics' + query({ limit: 100, cursor }));
    out.push(...page.topics);
    cursor = page.nextCursor;
  } while (cursor && out.length < max);
  return out;
}

export const getTopic = (id) => call('GET', tp(id));
export const createTopic = (body) => call('POST', '/v1/topics', body);
export const updateTopic = (id, body) => call('PATCH', tp(id), body);
export const deleteTopic = (id) => call('DELETE', tp(id));
export const publish = (id, messages) => call('POST', tp(id) + '/messages', { messages });
// readLog reads a page of the log: from and to (a sequence or an RFC 3339 time) and an
// attribute filter of [name, value] pairs; the cursor goes with the same to and filter.
export const readLog = (id, { from, to, cursor, limit = 20, filter = [] }) =>
  call('GET', tp(id) + '/messages' + withAttrs(query({ from: cursor ? undefined : from, to, cursor, limit }), filter));
export const stateKey = (id, key) => call('GET', tp(id) + '/state' + query({ key }));
export const listState = (id, cursor, limit = 20) => call('GET', tp(id) + '/state' + query({ limit, cursor }));
export const topicBindings = (id) => call('GET', tp(id) + '/bindings');
export const sources = (queue) => call('GET', q(queue) + '/sources');
export const bind = (queue, body) => call('POST', q(queue) + '/sources', body);
export const setFilter = (queue, binding, filter) => call('PATCH', q(queue) + '/sources/' + encodeURIComponent(binding), { filter });
export const unbind = (queue, binding) => call('DELETE', q(queue) + '/sources/' + encodeURIComponent(binding));
export const startReplay = (id, body) => call('POST', tp(id) + '/replays', body);
export const replays = (id, limit = 20) => call('GET', tp(id) + '/replays' + query({ limit }));
export const getReplay = (id, replay) => call('GET', tp(id) + '/replays/' + encodeURIComponent(replay));
export const cancelReplay = (id, replay) => call('POST', tp(id) + '/replays/' + encodeURIComponent(replay) + '/cancel');
