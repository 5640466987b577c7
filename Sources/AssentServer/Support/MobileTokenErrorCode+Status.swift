import AssentModel

extension MobileTokenErrorCode {
    /// The Mobile Token API's status for a failure of `status`: authentication failures 401, an unknown endpoint
    /// 404, HTTP's own 405, 413 and 429, server faults 500, every other refusal 400.
    public static func status(of failure: AssentServerError) -> Int {
        switch failure.status {
        case 401: 401
        case 404 where failure.code == .notFound: 404
        case 405, 413, 429: failure.status
        case 500...: 500
        default: 400
        }
    }
}
