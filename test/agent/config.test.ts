import { describe, expect, it } from "vitest";
import { loadConfig } from "../../agent/config";

/** The agent's environment, checked at start (no Docker). */

describe("PODHOST_API_URL", () => {
  const apiUrl = (url: string) => loadConfig({ PODHOST_API_URL: url }).apiUrl;

  it("takes https anywhere, and plain http to a loopback address only", () => {
    for (const url of [
      "https://api.example.com",
      "https://10.0.0.5:8443",
      "http://localhost:8787",
      "http://127.0.0.1:8787",
      "http://127.10.20.30",
      "http://[::1]:8787",
    ]) {
      expect(apiUrl(url), url).toBe(url);
    }
  });

  it("refuses plain http to any other host with a clear error naming the variable and the way out", () => {
    for (const url of [
      "http://api.example.com",
      "http://10.0.0.5:8787",
      "http://128.0.0.1",
      "http://127.0.0.1.example.com", // a name that only looks like loopback
      "http://localhost.example.com",
      "http://[::ffff:127.0.0.1]", // IPv4-mapped: not ::1
      "http://[2001:db8::1]",
    ]) {
      expect(() => apiUrl(url), url).toThrow(/PODHOST_API_URL: plain http:\/\/ is refused.*use https:\/\//);
    }
  });

  it("refuses other schemes", () => {
    expect(() => apiUrl("ws://localhost:8787")).toThrow(/PODHOST_API_URL: must be an https:\/\/ URL/);
    expect(() => apiUrl("ftp://api.example.com")).toThrow(/PODHOST_API_URL/);
  });
});
