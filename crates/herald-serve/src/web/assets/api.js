// The public API, as any client would use it: JSON over fetch with the
// login cookie (same origin), the event stream over EventSource.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Called when a request comes back 401 (set by the app: show the login). */
export const hooks = { unauthorized: () => {} };

async function request(method, path, body) {
  const init = { method, credentials: "same-origin", headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, "network", "the server cannot be reached: " + err.message);
  }
  if (response.status === 204) return null;
  let data = null;
  const text = await response.text();
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    const err = (data && data.error) || {};
    if (response.status === 401 && path !== "/api/login") hooks.unauthorized();
    throw new ApiError(response.status, err.code || "http_" + response.status, err.message || response.statusText);
  }
  return data;
}

export const get = (path) => request("GET", path);
export const post = (path, body) => request("POST", path, body === undefined ? {} : body);
export const del = (path) => request("DELETE", path);

/** `?a=1&b=2` of the set values. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? "?" + s : "";
}

/** Submits a protocol operation to session `id`. */
export const op = (id, operation) => post(`/api/sessions/${encodeURIComponent(id)}/ops`, operation);

/**
 * Follows session `id`'s events from after `after`; `onEvent` gets each
 * parsed event, `onState` "open" / "closed" / "error". Returns a stop
 * function. EventSource reconnects by itself with Last-Event-ID.
 */
export function follow(id, after, onEvent, onState) {
  const url = `/api/sessions/${encodeURIComponent(id)}/events` + query({ after });
  const source = new EventSource(url);
  source.onopen = () => onState && onState("open");
  source.onerror = () => onState && onState(source.readyState === EventSource.CLOSED ? "closed" : "error");
  source.onmessage = (message) => {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return;
    }
    onEvent(event);
  };
  return () => source.close();
}
