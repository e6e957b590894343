/** The viewer page (DESIGN 10) for the API's session URLs and the render worker: plain functions, no HTTP framework. */
export {
  itemFileResponse,
  itemFileResponseForPath,
  resolveViewerFiles,
  scriptJson,
  VIEWER_PAGE_HEADERS,
  viewerAssetResponse,
  viewerBundle,
  viewerMessagePage,
  viewerPageHtml,
  type ViewerPageOptions,
} from './page.ts';
export {
  VIEWER_ASSETS_PATH,
  VIEWER_DATA_ELEMENT_ID,
  VIEWER_FILE_KINDS,
  VIEWER_FILES_PATH,
  type ViewerBackground,
  type ViewerFileKind,
  type ViewerFiles,
  type ViewerItem,
  type ViewerMode,
  type ViewerPageData,
  type ViewerSceneSettings,
} from './contract.ts';
