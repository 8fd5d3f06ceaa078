export * from "./messages";
export * from "./ops";
