// Connected-apps admission (S2-S5): the public face of src/apps.
export * from "./AppAdmission.js"
export * as AppsPolicy from "./AppsPolicy.js"
export * from "./errors.js"
