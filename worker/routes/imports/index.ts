import { createRouter } from "../../http/router";
import { registerCreateImport } from "./create";
import { registerListImportSources } from "./sources";

/**
 * Imports (docs/imports.md), mounted at /api/imports: a URL or a paste into a new pod, and the
 * public catalog of import routes and guided platforms.
 */
export const importsRouter = createRouter();

registerCreateImport(importsRouter);
registerListImportSources(importsRouter);
