export * from "./api-tokens";
export * from "./mail-outbox";
export * from "./one-time-tokens";
export * from "./pods";
export * from "./sessions";
export * from "./teams";
export * from "./users";
