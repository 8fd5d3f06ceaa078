export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

let ipCounter = 0;

/** A thin JSON client for the public API, as a user's script would call it. */
export function apiClient(base: string, token?: string) {
  const request = async <T = any>(method: string, path: string, body?: unknown): Promise<Reply<T>> => {
    const headers: Record<string, string> = {
      "cf-connecting-ip": `10.9.${++ipCounter % 250}.${ipCounter % 199}`,
    };
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`${base}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  };
  return {
    get: <T = any>(path: string) => request<T>("GET", path),
    post: <T = any>(path: string, body?: unknown) => request<T>("POST", path, body ?? {}),
    put: <T = any>(path: string, body?: unknown) => request<T>("PUT", path, body ?? {}),
    delete: <T = any>(path: string, body?: unknown) => request<T>("DELETE", path, body),
  };
}

export type ApiClient = ReturnType<typeof apiClient>;

let userCounter = 0;

/** A new account (its personal team active) and a client acting as it. */
export async function signUp(base: string, name = "E2E User") {
  const email = `e2e-${Date.now().toString(36)}-${++userCounter}@example.test`;
  const res = await apiClient(base).post("/api/auth/register", {
    email,
    password: "correct horse battery",
    name,
  });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { token: res.body.token as string, user: res.body.user, api: apiClient(base, res.body.token) };
}
