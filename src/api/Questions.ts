// Public: the optional port that answers the questions a turn asks (default: every question is declined).
export {
  answered,
  cancelled,
  declineAll,
  declined,
  type Question,
  type QuestionKind,
  type QuestionOption,
  type QuestionPrompt,
  QuestionPromptFailed,
  type QuestionReply,
  Questions,
  type QuestionSource,
  type QuestionsService
} from "../ports/Questions.js"
