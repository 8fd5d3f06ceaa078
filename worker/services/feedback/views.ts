import type { FeedbackRow, FeedbackSettingsRow, FeedbackStatus, FeedbackVisibility } from "../../db/schema";

/** The spec's Feedback comment resource. */
export interface FeedbackView {
  id: string;
  pod_name: string;
  submitter_id: string;
  name: string;
  email: string;
  comment: string;
  page_path: string;
  pin_selector: string;
  pin_x: number | null;
  pin_y: number | null;
  viewport_w: number | null;
  viewport_h: number | null;
  element_text: string;
  status: FeedbackStatus;
  created_at: string;
}

export const toFeedbackView = (row: FeedbackRow, podName: string): FeedbackView => ({
  id: row.id,
  pod_name: podName,
  submitter_id: row.submitterId,
  name: row.name,
  email: row.email,
  comment: row.comment,
  page_path: row.pagePath,
  pin_selector: row.pinSelector,
  pin_x: row.pinX,
  pin_y: row.pinY,
  viewport_w: row.viewportW,
  viewport_h: row.viewportH,
  element_text: row.elementText,
  status: row.status,
  created_at: row.createdAt,
});

export interface FeedbackSettingsView {
  enabled: boolean;
  token: string;
  visibility: FeedbackVisibility;
  share_url: string;
}

/** contract: `share_url` is `https://{pod domain}/?pod_feedback={token}` */
export const shareUrl = (podName: string, podDomain: string, token: string) =>
  `https://${podName}.${podDomain}/?pod_feedback=${token}`;

export const toSettingsView = (
  row: FeedbackSettingsRow,
  podName: string,
  podDomain: string,
): FeedbackSettingsView => ({
  enabled: row.enabled,
  token: row.token,
  visibility: row.visibility,
  share_url: shareUrl(podName, podDomain, row.token),
});
