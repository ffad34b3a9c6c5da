// Public: the one port an app must provide: where replies go.
export { Delivery, DeliveryFailed, type Reply, type ReplyMedia } from "../ports/Delivery.js"
