// The whole public surface as one module, for the API report only (api-extractor/config.json; not a package entry):
// every entry of package.json's "exports", so a type one entry names that another exports counts as public.
export * from "./index.js"
export * as Live from "../layers/Live.js"
export * as Test from "../layers/Test.js"
export * as Testing from "./testing/index.js"
